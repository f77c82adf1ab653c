// TensorStore: sizing each bound tensor from its operands, laying the state and the
// micro-batches' activations out, and filling them.
#include "executor/tensor_store.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <set>
#include <stdexcept>
#include <string>

#include "kernels/kernel.h"

namespace dtsim::executor {

namespace {

constexpr int64_t kAlign = 64;
constexpr int64_t kMaxOffset = int64_t{1} << 40;

// How a weight starts: a constant, or uniform within 1/sqrt(fan_in) (fan_in 0: [-1, 1)).
struct Init {
  bool constant = false;
  float value = 0;
  int64_t fan_in = 0;
};
int64_t aligned(int64_t bytes) {
  return (std::max<int64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
}

// A weight and its gradient lie at the same offset of the parameter and gradient buffers.
TensorRef state_slot(TensorRef t) {
  if (t.role == TensorRole::kWeightGrad) t.role = TensorRole::kWeight;
  if (t.role == TensorRole::kBiasGrad) t.role = TensorRole::kBias;
  return t;
}

bool whole_state(TensorRole r) {
  return r == TensorRole::kParams || r == TensorRole::kGrads || r == TensorRole::kMoment1 ||
         r == TensorRole::kMoment2;
}

// What one tensor needs: bytes, the element type its operands read it as, and how a
// framework initialises it (weights only; 0: uniform in [-1, 1)).
struct Need {
  int64_t bytes = 0;
  kernels::ElementType type = kernels::ElementType::kFloat32;
  Init init;
};

std::string describe_tensor(const TensorRef& t) {
  std::string s(tensor_role_name(t.role));
  if (whole_state(t.role)) return s;
  return s + " of op " + std::to_string(t.op) + " of layer " +
         (t.layer == kModelInput ? std::string("input") : std::to_string(t.layer));
}

// Fills a tensor as a kernel's operand of its role would be filled (positive where kernels
// divide by or take the root of it), then as `init` says.
void fill(std::byte* data, int64_t bytes, kernels::ElementType type, TensorRole role, Init init,
          uint64_t& state) {
  kernels::OperandSpec spec;
  spec.name = role == TensorRole::kRstd ? "rstd" : role == TensorRole::kMoment2 ? "v" : "x";
  spec.type = type;
  spec.elements = bytes / kernels::element_bytes(type);
  kernels::fill_operand(OpSignature{}, spec, data, state);
  if (type != kernels::ElementType::kFloat32) return;
  auto* f = reinterpret_cast<float*>(data);
  if (init.constant) {
    std::fill(f, f + spec.elements, init.value);
  } else if (init.fan_in > 0) {
    const auto bound = static_cast<float>(1 / std::sqrt(static_cast<double>(init.fan_in)));
    for (int64_t i = 0; i < spec.elements; ++i) f[i] *= bound;
  }
}

// How PyTorch and Megatron-LM initialise a weight that `op` binds to `operand` in its
// forward pass: a linear layer's or convolution's weight uniform within 1/sqrt(fan-in)
// (nn.Linear's and nn.Conv2d's default bound), a norm's scale 1 and its shift and any bias
// 0 (Megatron-LM zeroes biases). Values of the scale of a real step's keep its kernels on
// normal floats: uniform weights in [-1, 1) grow the activations layer by layer until the
// softmax saturates and the gradients turn subnormal, which the CPU runs many times slower.
Init init_of(const OpSignature& op, const std::string& operand) {
  Init init;
  if (op.pass != OpPass::kForward) return init;
  if (operand == "gamma") return {true, 1.0f, 0};
  if (operand == "beta" || operand == "bias") return {true, 0.0f, 0};
  const bool gemm = op.kind == KernelKind::kGemm || op.kind == KernelKind::kGroupedGemm ||
                    op.kind == KernelKind::kRouter;
  if (gemm && (operand == "b" || operand == "weight")) init.fan_in = op.gemm.k;
  if (op.kind == KernelKind::kConv && operand == "weight")
    init.fan_in = op.conv.c * op.conv.r * op.conv.s;
  return init;
}

}  // namespace

void TensorStore::Free::operator()(std::byte* p) const { std::free(p); }

TensorStore::Block TensorStore::allocate(int64_t bytes) {
  auto* p =
      static_cast<std::byte*>(std::aligned_alloc(kAlign, static_cast<size_t>(aligned(bytes))));
  if (p == nullptr) throw std::bad_alloc();
  Block b;
  b.memory.reset(p);
  b.bytes = bytes;
  return b;
}

TensorStore::TensorStore(const TaskGraph& graph, const RankPlan& plan) {
  std::map<TensorRef, Need> state, activations;
  std::map<TensorRole, int64_t> whole;
  std::set<uint32_t> micro_batches;
  std::set<std::pair<OpListId, uint32_t>> seen;
  for (const TaskId id : plan.tasks) {
    const TaskView t = graph.task(id);
    if (t.kind != TaskKind::kCompute || t.ops == kNoOps) continue;
    if (!seen.insert({t.ops, t.tag}).second) continue;
    const auto ops = graph.op_list(t.ops);
    const auto bound = graph.op_operands(t.ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (bound[i].empty()) continue;
      const std::string where = "task " + std::to_string(id) + " (\"" + std::string(t.name) +
                                "\", rank " + std::to_string(t.rank) + "), op \"" + ops[i].name +
                                "\"";
      if (const std::string why = kernels::cpu_unsupported_reason(ops[i]); !why.empty()) {
        throw kernels::UnsupportedOp(where + ": " + why);
      }
      const std::vector<kernels::OperandSpec> specs = kernels::cpu_operands(ops[i]);
      for (const OperandBinding& b : bound[i]) {
        const auto spec = std::find_if(specs.begin(), specs.end(),
                                       [&](const auto& s) { return s.name == b.operand; });
        if (spec == specs.end()) {
          throw std::invalid_argument(where + " binds operand \"" + b.operand +
                                      "\", which its kernel does not have");
        }
        const int64_t size = kernels::element_bytes(spec->type);
        // Offsets come from the lowering or a file: a negative one, or one past any memory
        // (2^40 elements), is refused before it can wrap.
        if (b.offset < 0 || b.offset > kMaxOffset) {
          throw std::invalid_argument(where + " binds operand \"" + b.operand + "\" at offset " +
                                      std::to_string(b.offset) + "; expected 0 to " +
                                      std::to_string(kMaxOffset) + " elements");
        }
        const int64_t bytes = (b.offset + spec->elements) * size;
        if (whole_state(b.tensor.role)) {
          whole[b.tensor.role] = std::max(whole[b.tensor.role], bytes);
          continue;
        }
        const bool per_mb = per_micro_batch(b.tensor.role);
        if (per_mb && t.tag == kNoMicroBatch) {
          throw std::invalid_argument(where + " binds a micro-batch's " +
                                      describe_tensor(b.tensor) +
                                      ", but its task belongs to no micro-batch");
        }
        if (per_mb) micro_batches.insert(t.tag);
        Need& need = per_mb ? activations[b.tensor] : state[state_slot(b.tensor)];
        if (need.bytes > 0 && kernels::element_bytes(need.type) != size) {
          throw std::invalid_argument(where + " reads " + describe_tensor(b.tensor) + " as " +
                                      std::to_string(size) + "-byte elements; another op as " +
                                      std::to_string(kernels::element_bytes(need.type)));
        }
        need.type = spec->type;
        need.bytes = std::max(need.bytes, bytes);
        if (b.tensor.role == TensorRole::kWeight || b.tensor.role == TensorRole::kBias) {
          const Init init = init_of(ops[i], b.operand);
          if (init.constant || init.fan_in > 0) need.init = init;
        }
      }
    }
  }
  // Lay out, then allocate and fill: the state once, the activations per micro-batch.
  for (const auto& [tensor, need] : state) {
    state_offset_[tensor] = state_bytes_;
    state_bytes_ += aligned(need.bytes);
  }
  for (const auto& [tensor, need] : activations) {
    frame_offset_[tensor] = frame_bytes_;
    frame_bytes_ += aligned(need.bytes);
  }
  const auto whole_of = [&](TensorRole r) {
    const auto it = whole.find(r);
    return std::max(state_bytes_, it == whole.end() ? 0 : it->second);
  };
  uint64_t seed = kernels::kFillSeed;
  if (!state.empty() || !whole.empty()) {
    params_ = allocate(whole_of(TensorRole::kParams));
    grads_ = allocate(whole_of(TensorRole::kGrads));
    moment1_ = allocate(whole_of(TensorRole::kMoment1));
    moment2_ = allocate(whole_of(TensorRole::kMoment2));
    for (const auto& [block, role] : {std::pair{&params_, TensorRole::kParams},
                                      {&grads_, TensorRole::kGrads},
                                      {&moment1_, TensorRole::kMoment1},
                                      {&moment2_, TensorRole::kMoment2}}) {
      fill(block->data(), block->bytes, kernels::ElementType::kFloat32, role, Init{}, seed);
    }
    for (const auto& [tensor, need] : state) {
      if (need.init.constant || need.init.fan_in > 0) {
        fill(params_.data() + state_offset_.at(tensor), need.bytes, need.type, tensor.role,
             need.init, seed);
      }
    }
  }
  for (const uint32_t mb : micro_batches) {
    Block& frame = frames_[mb] = allocate(frame_bytes_);
    for (const auto& [tensor, need] : activations) {
      fill(frame.data() + frame_offset_.at(tensor), need.bytes, need.type, tensor.role, Init{},
           seed);
    }
  }
}

TensorStore::~TensorStore() = default;

int64_t TensorStore::bytes() const {
  int64_t n = frame_bytes_ * static_cast<int64_t>(frames_.size());
  for (const Block* b : {&params_, &grads_, &moment1_, &moment2_}) n += b->bytes;
  return n;
}

TensorStore::Location TensorStore::locate(const TensorRef& t) const {
  switch (t.role) {
    case TensorRole::kParams:
      return {false, params_.data(), 0};
    case TensorRole::kGrads:
      return {false, grads_.data(), 0};
    case TensorRole::kMoment1:
      return {false, moment1_.data(), 0};
    case TensorRole::kMoment2:
      return {false, moment2_.data(), 0};
    default:
      break;
  }
  if (per_micro_batch(t.role)) return {true, nullptr, frame_offset_.at(t)};
  const bool gradient = t.role == TensorRole::kWeightGrad || t.role == TensorRole::kBiasGrad;
  return {false, (gradient ? grads_.data() : params_.data()) + state_offset_.at(state_slot(t)), 0};
}

}  // namespace dtsim::executor
