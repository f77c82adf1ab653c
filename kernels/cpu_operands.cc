// What each CPU kernel reads and writes, sized from the op signature, and the buffers that
// hold them.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "kernels/cpu_kernels.h"
#include "kernels/kernel.h"

namespace dtsim::kernels {

namespace {

OperandSpec f32(std::string name, int64_t elements, bool written = false) {
  return {std::move(name), elements, ElementType::kFloat32, written};
}

bool is_backward(const OpSignature& op) { return op.pass != OpPass::kForward; }

}  // namespace

int element_bytes(ElementType t) {
  switch (t) {
    case ElementType::kFloat32:
    case ElementType::kInt32:
      return 4;
    case ElementType::kUInt16:
      return 2;
    case ElementType::kUInt8:
      return 1;
  }
  return 1;
}

int64_t op_bound(const OpSignature& op, std::string_view operand) {
  return std::max<int64_t>(1, operand == "labels" ? op.width : op.rows);
}

int64_t pool_input_width(const OpSignature& op) {
  // Forward traffic is (inputs + outputs) x element bytes (zoo: pool); backward twice that.
  const double per_pass = is_backward(op) ? op.bytes / 2 : op.bytes;
  const double elements = per_pass / dtype_size_bytes(op.storage);
  return op.rows > 0 ? std::llround(elements / static_cast<double>(op.rows)) - op.width : 0;
}

int64_t pool_window(const OpSignature& op) {
  const double outputs = static_cast<double>(op.rows) * static_cast<double>(op.width);
  if (is_backward(op) || outputs <= 0)
    return std::max<int64_t>(1, pool_input_width(op) / std::max<int64_t>(1, op.width));
  return std::max<int64_t>(1, std::llround(op.flops / outputs));
}

std::string cpu_unsupported_reason(const OpSignature& op) {
  const std::string what = std::string(kernel_kind_name(op.kind)) + " (" +
                           std::string(op_pass_name(op.pass)) + ", \"" + op.name + "\")";
  // A cast reads bf16 (and writes FP8); a copy moves bytes of any type.
  if (op.kind == KernelKind::kCast) {
    if (op.storage != DType::kBf16) {
      return what + ": the CPU cast reads bf16, not " + std::string(dtype_name(op.storage));
    }
  } else if (op.kind != KernelKind::kCopy && op.storage != DType::kFp32) {
    return what + ": the CPU kernels store fp32 (the scenario's precision fp32), not " +
           std::string(dtype_name(op.storage));
  }
  const bool gemm = op.kind == KernelKind::kGemm || op.kind == KernelKind::kBatchedGemm ||
                    op.kind == KernelKind::kGroupedGemm || op.kind == KernelKind::kRouter;
  const bool sized_apart = op.kind == KernelKind::kCopy || op.kind == KernelKind::kConv ||
                           op.kind == KernelKind::kFlashAttention;
  if (gemm && (op.gemm.m <= 0 || op.gemm.n <= 0 || op.gemm.k <= 0 || op.gemm.batch <= 0)) {
    return what + ": a GEMM needs positive m, n, k and batch";
  }
  if (!gemm && !sized_apart && (op.rows <= 0 || op.width <= 0)) {
    return what + ": needs positive rows and width";
  }
  const ConvDims& c = op.conv;
  if (op.kind == KernelKind::kConv &&
      (c.n <= 0 || c.c <= 0 || c.h <= 0 || c.w <= 0 || c.k <= 0 || c.r <= 0 || c.s <= 0 ||
       c.stride <= 0 || c.padding < 0 || c.h + 2 * c.padding < c.r || c.w + 2 * c.padding < c.s)) {
    return what + ": a convolution needs positive sizes and a kernel that fits its padded image";
  }
  const AttentionDims& a = op.attention;
  if (op.kind == KernelKind::kFlashAttention &&
      (a.batch <= 0 || a.heads <= 0 || a.kv_heads <= 0 || a.head_dim <= 0 || a.q_len <= 0 ||
       a.kv_len <= 0 || a.heads % a.kv_heads != 0 || a.q_len > a.kv_len)) {
    return what +
           ": attention needs positive sizes, query heads a multiple of the key-value "
           "heads and no more queries than keys";
  }
  if (op.kind == KernelKind::kPool && pool_input_width(op) < op.width) {
    return what + ": its bytes leave no input of at least its output's width";
  }
  if (op.kind == KernelKind::kCopy && op.bytes < 1) return what + ": copies no bytes";
  if (op.kind == KernelKind::kOptimizerUpdate && op.pass != OpPass::kStep) {
    return what + ": an optimizer update runs in the step pass";
  }
  return "";
}

std::vector<OperandSpec> cpu_operands(const OpSignature& op) {
  if (const std::string why = cpu_unsupported_reason(op); !why.empty()) throw UnsupportedOp(why);
  const int64_t e = op.rows * op.width;
  const int64_t r = op.rows;
  const int64_t w = op.width;
  const bool bwd = is_backward(op);
  const OperandSpec ids{"ids", r, ElementType::kInt32, false};
  switch (op.kind) {
    case KernelKind::kGemm:
    case KernelKind::kBatchedGemm:
    case KernelKind::kGroupedGemm: {
      const GemmDims& g = op.gemm;
      // A weight gradient accumulates over micro-batches, as frameworks do (beta = 1).
      return {f32("a", g.batch * g.m * g.k), f32("b", g.batch * g.k * g.n),
              f32("c", g.batch * g.m * g.n, true)};
    }
    case KernelKind::kLayerNorm:
      if (!bwd) {
        return {f32("x", e), f32("gamma", w), f32("beta", w), f32("y", e, true),
                f32("mean", r, true), f32("rstd", r, true)};
      }
      return {f32("dy", e),          f32("x", e),          f32("gamma", w),
              f32("mean", r),        f32("rstd", r),       f32("dx", e, true),
              f32("dgamma", w, true), f32("dbeta", w, true)};
    case KernelKind::kRmsNorm:
      if (!bwd) return {f32("x", e), f32("gamma", w), f32("y", e, true), f32("rstd", r, true)};
      return {f32("dy", e), f32("x", e), f32("gamma", w), f32("rstd", r), f32("dx", e, true),
              f32("dgamma", w, true)};
    case KernelKind::kSoftmax:
      if (!bwd) return {f32("x", e), f32("y", e, true)};
      return {f32("y", e), f32("dy", e), f32("dx", e, true)};
    case KernelKind::kGelu:
    case KernelKind::kRelu:
      if (!bwd) return {f32("x", e), f32("y", e, true)};
      return {f32("x", e), f32("dy", e), f32("dx", e, true)};
    case KernelKind::kSwiglu:
      if (!bwd) return {f32("gate", e), f32("up", e), f32("y", e, true)};
      return {f32("gate", e), f32("up", e), f32("dy", e), f32("dgate", e, true),
              f32("dup", e, true)};
    case KernelKind::kDropout:
      if (!bwd) return {f32("x", e), f32("y", e, true), {"mask", e, ElementType::kUInt8, true}};
      return {f32("dy", e), {"mask", e, ElementType::kUInt8, false}, f32("dx", e, true)};
    case KernelKind::kElementwise:
      if (elementwise_streams(op) == 3) {
        if (!bwd) return {f32("a", e), f32("b", e), f32("y", e, true)};
        return {f32("dy", e), f32("da", e, true), f32("db", e, true)};
      }
      if (!bwd) return {f32("x", e), f32("bias", w), f32("y", e, true)};
      return {f32("dy", e), f32("dx", e, true), f32("dbias", w, true)};
    case KernelKind::kEmbedding:
      // The table as the rows the micro-batch touches: the signature does not carry the
      // vocabulary, and a gather's time is its rows read and written.
      if (!bwd) return {f32("table", e), ids, f32("y", e, true)};
      return {f32("dy", e), ids, f32("dtable", e, true)};
    case KernelKind::kPermute:
      // A gather of rows by index (its backward a scatter-add), as the embedding's: the
      // signature carries the rows moved, and moving them is the kernel's whole time.
      if (!bwd) return {f32("x", e), ids, f32("y", e, true)};
      return {f32("dy", e), ids, f32("dx", e, true)};
    case KernelKind::kCrossEntropy: {
      const OperandSpec labels{"labels", r, ElementType::kInt32, false};
      if (!bwd) return {f32("logits", e), labels, f32("probs", e, true), f32("loss", r, true)};
      return {f32("probs", e), labels, f32("dlogits", e, true)};
    }
    case KernelKind::kOptimizerUpdate:
      return {f32("grad", e), f32("param", e, true), f32("m", e, true), f32("v", e, true)};
    case KernelKind::kCopy: {
      const auto n = static_cast<int64_t>(op.bytes);
      return {{"src", n, ElementType::kUInt8, false}, {"dst", n, ElementType::kUInt8, true}};
    }
    case KernelKind::kBatchNorm:
      if (!bwd) {
        return {f32("x", e),       f32("gamma", w),      f32("beta", w),
                f32("y", e, true), f32("mean", w, true), f32("rstd", w, true)};
      }
      return {f32("dy", e),   f32("x", e),        f32("gamma", w),        f32("mean", w),
              f32("rstd", w), f32("dx", e, true), f32("dgamma", w, true), f32("dbeta", w, true)};
    case KernelKind::kFlashAttention: {
      const AttentionDims& a = op.attention;
      const int64_t qn = a.batch * a.heads * a.q_len * a.head_dim;
      const int64_t kvn = a.batch * a.kv_heads * a.kv_len * a.head_dim;
      const int64_t rows_q = a.batch * a.heads * a.q_len;
      if (!bwd) {
        return {f32("q", qn), f32("k", kvn), f32("v", kvn), f32("o", qn, true),
                f32("lse", rows_q, true)};
      }
      return {f32("q", qn),        f32("k", kvn),        f32("v", kvn),
              f32("o", qn),        f32("do", qn),        f32("lse", rows_q),
              f32("dq", qn, true), f32("dk", kvn, true), f32("dv", kvn, true)};
    }
    case KernelKind::kConv: {
      const ConvDims& c = op.conv;
      const int64_t x = c.n * c.c * c.h * c.w, wt = c.k * c.c * c.r * c.s;
      const int64_t pq = cpu::conv_output_pixels(c);
      const int64_t y = c.n * c.k * pq, col = c.c * c.r * c.s * pq;
      if (op.pass == OpPass::kBackwardData) {
        return {f32("dy", y), f32("weight", wt), f32("dx", x, true), f32("col", col, true)};
      }
      if (op.pass == OpPass::kBackwardWeight) {
        return {f32("dy", y), f32("x", x), f32("dweight", wt, true), f32("col", col, true)};
      }
      return {f32("x", x), f32("weight", wt), f32("y", y, true), f32("col", col, true)};
    }
    case KernelKind::kPool: {
      const int64_t in = r * pool_input_width(op);
      if (!bwd) return {f32("x", in), f32("y", e, true)};
      return {f32("dy", e), f32("dx", in, true)};
    }
    case KernelKind::kRouter: {
      // The gating GEMM (tokens x experts over hidden) and its softmax over the experts.
      const GemmDims& g = op.gemm;
      const int64_t x = g.m * g.k, wt = g.n * g.k, probs = g.m * g.n;
      if (!bwd) return {f32("x", x), f32("weight", wt), f32("probs", probs, true)};
      return {f32("dprobs", probs),       f32("probs", probs), f32("x", x),
              f32("weight", wt),          f32("dx", x, true),  f32("dweight", wt, true),
              f32("dlogits", probs, true)};
    }
    case KernelKind::kCast:
      return {{"x", e, ElementType::kUInt16, false},
              {"y", e, ElementType::kUInt8, true},
              {"y_transposed", e, ElementType::kUInt8, true}};
    default:
      break;
  }
  throw UnsupportedOp(cpu_unsupported_reason(op));
}

void OperandBuffers::Free::operator()(std::byte* p) const { std::free(p); }

void fill_operand(const OpSignature& op, const OperandSpec& s, std::byte* p, uint64_t& state) {
  const auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  };
  const bool positive = s.name == "v" || s.name == "rstd";
  if (s.type == ElementType::kFloat32) {
    auto* f = reinterpret_cast<float*>(p);
    for (int64_t i = 0; i < s.elements; ++i) {
      const float u = static_cast<float>(next()) / 2147483648.0f;  // [0, 1)
      f[i] = positive ? 0.5f + u : 2 * u - 1;
    }
  } else if (s.type == ElementType::kUInt16) {
    // bf16 bit patterns of values in [-1, 1): the upper half of a float's bits.
    auto* v = reinterpret_cast<uint16_t*>(p);
    for (int64_t i = 0; i < s.elements; ++i) {
      const float f = static_cast<float>(next()) / 1073741824.0f - 1.0f;
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      v[i] = static_cast<uint16_t>(bits >> 16);
    }
  } else if (s.type == ElementType::kInt32) {
    // Embedding ids index the table's rows; labels index a row's classes.
    const int64_t bound = op_bound(op, s.name);
    auto* v = reinterpret_cast<int32_t*>(p);
    for (int64_t i = 0; i < s.elements; ++i) v[i] = static_cast<int32_t>(next() % bound);
  } else {
    auto* m = reinterpret_cast<uint8_t*>(p);
    for (int64_t i = 0; i < s.elements; ++i) m[i] = (next() % 10) != 0;  // keep 90%
  }
}

OperandBuffers::OperandBuffers(const OpSignature& op, std::span<std::byte* const> external)
    : op_(op), specs_(cpu_operands(op)) {
  uint64_t state = kFillSeed;
  if (!external.empty() && external.size() != specs_.size()) {
    throw std::invalid_argument(
        "OperandBuffers for \"" + op.name + "\": " + std::to_string(external.size()) +
        " external buffers for " + std::to_string(specs_.size()) + " operands");
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (!external.empty() && external[i] != nullptr) {
      data_.push_back(external[i]);
      owned_.emplace_back();
      continue;
    }
    const OperandSpec& s = specs_[i];
    const auto bytes = static_cast<size_t>(s.elements) * static_cast<size_t>(element_bytes(s.type));
    const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    auto* p = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
    if (p == nullptr) throw std::bad_alloc();
    owned_.emplace_back(p);
    data_.push_back(p);
    fill_operand(op, s, p, state);
  }
}

void OperandBuffers::point(size_t i, std::byte* data) {
  if (owned_.at(i) || data == nullptr) {
    throw std::invalid_argument("OperandBuffers for \"" + op_.name + "\": operand \"" +
                                specs_[i].name + "\" was not given from outside");
  }
  data_[i] = data;
}

int64_t OperandBuffers::total_bytes() const {
  int64_t n = 0;
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (owned_[i]) n += specs_[i].elements * element_bytes(specs_[i].type);
  }
  return n;
}

}  // namespace dtsim::kernels
