// bind_operands: each kernel kind's operands (in kernels/kernel.h's names) mapped to the
// op's inputs, result, statistics, weights and their gradients.
#include "models/operand_binding.h"

#include <string>
#include <utility>
#include <vector>

namespace dtsim::models {

namespace {

// The tensors around one op of one layer, and the operand list being built.
class Binder {
 public:
  Binder(const Workload& w, int layer, int op) : layer_(static_cast<uint32_t>(layer)), op_(op) {
    const Op& o = w.layers[static_cast<size_t>(layer)].ops[static_cast<size_t>(op)];
    const std::vector<int> reads = o.reads.empty() ? std::vector<int>{op - 1} : o.reads;
    for (int r : reads) {
      if (r >= 0) {
        inputs_.push_back({TensorRole::kOutput, layer_, static_cast<uint32_t>(r)});
      } else if (layer > 0) {
        // The layer's input: the previous layer's last result.
        const auto& prev = w.layers[static_cast<size_t>(layer) - 1].ops;
        inputs_.push_back(
            {TensorRole::kOutput, layer_ - 1, static_cast<uint32_t>(prev.size() - 1)});
      } else {
        inputs_.push_back({TensorRole::kOutput, kModelInput, 0});
      }
    }
    has_params_ = o.params > 0;
  }

  size_t inputs() const { return inputs_.size(); }
  bool has_params() const { return has_params_; }
  TensorRef input(size_t i) const { return inputs_[i]; }
  TensorRef input_grad(size_t i) const {
    TensorRef t = inputs_[i];
    t.role = TensorRole::kOutputGrad;
    return t;
  }
  TensorRef own(TensorRole role) const { return {role, layer_, static_cast<uint32_t>(op_)}; }

  void bind(std::string operand, TensorRef tensor, int64_t offset = 0) {
    out_.push_back({std::move(operand), tensor, offset});
  }
  OpOperands take() { return std::move(out_); }

 private:
  uint32_t layer_;
  int op_;
  std::vector<TensorRef> inputs_;
  bool has_params_ = false;
  OpOperands out_;
};

// A GEMM-shaped kernel (GEMM, grouped GEMM, batched GEMM, router, convolution): forward
// x, w -> y; backward its data gradient and its weight's (or second input's) gradient, with
// a, b and c as backward_data_gemm and backward_weight_gemm lay them out. `w` is the weight,
// or the batched GEMM's second input; `w_transposed` whether the forward read it
// transposed (B stored [n, k]).
struct GemmOperands {
  TensorRef w;
  TensorRef dw;
  int64_t w_offset = 0;
  bool w_transposed = false;
};

void bind_gemm(Binder& b, OpPass pass, const GemmOperands& g) {
  const TensorRef x = b.input(0), y = b.own(TensorRole::kOutput);
  const TensorRef dx = b.input_grad(0), dy = b.own(TensorRole::kOutputGrad);
  switch (pass) {
    case OpPass::kBackwardData:  // dA = dC op(B)^T
      b.bind("a", dy);
      b.bind("b", g.w, g.w_offset);
      b.bind("c", dx);
      return;
    case OpPass::kBackwardWeight:
      if (g.w_transposed) {  // dB[n, k] = dC^T A
        b.bind("a", dy);
        b.bind("b", x);
      } else {  // dB[k, n] = A^T dC
        b.bind("a", x);
        b.bind("b", dy);
      }
      b.bind("c", g.dw, g.w_offset);
      return;
    default:
      b.bind("a", x);
      b.bind("b", g.w, g.w_offset);
      b.bind("c", y);
      return;
  }
}

void bind_conv(Binder& b, OpPass pass) {
  const TensorRef w = b.own(TensorRole::kWeight);
  switch (pass) {
    case OpPass::kBackwardData:
      b.bind("dy", b.own(TensorRole::kOutputGrad));
      b.bind("weight", w);
      b.bind("dx", b.input_grad(0));
      return;
    case OpPass::kBackwardWeight:
      b.bind("dy", b.own(TensorRole::kOutputGrad));
      b.bind("x", b.input(0));
      b.bind("dweight", b.own(TensorRole::kWeightGrad));
      return;
    default:
      b.bind("x", b.input(0));
      b.bind("weight", w);
      b.bind("y", b.own(TensorRole::kOutput));
      return;
  }
}

// The forward GEMM of a (split) GEMM kernel of any pass, undoing backward_data_gemm and
// backward_weight_gemm.
GemmDims forward_gemm(const OpSignature& k, bool b_transposed) {
  const GemmDims& g = k.gemm;
  switch (k.pass) {
    case OpPass::kBackwardData:
      return {g.m, g.k, g.n, g.batch, false, b_transposed};
    case OpPass::kBackwardWeight:
      if (b_transposed) return {g.k, g.m, g.n, g.batch, false, true};
      return {g.k, g.n, g.m, g.batch, false, false};
    default:
      return g;
  }
}

// Norms: x, gamma (and beta) -> y with saved statistics.
void bind_norm(Binder& b, bool backward, bool beta, bool mean) {
  if (!backward) {
    b.bind("x", b.input(0));
    b.bind("gamma", b.own(TensorRole::kWeight));
    if (beta) b.bind("beta", b.own(TensorRole::kBias));
    b.bind("y", b.own(TensorRole::kOutput));
  } else {
    b.bind("dy", b.own(TensorRole::kOutputGrad));
    b.bind("x", b.input(0));
    b.bind("gamma", b.own(TensorRole::kWeight));
    b.bind("dx", b.input_grad(0));
    b.bind("dgamma", b.own(TensorRole::kWeightGrad));
    if (beta) b.bind("dbeta", b.own(TensorRole::kBiasGrad));
  }
  if (mean) b.bind("mean", b.own(TensorRole::kMean));
  b.bind("rstd", b.own(TensorRole::kRstd));
}

// A pointwise kernel of one input: x -> y; backward reads `saved` (x, or y for a softmax).
void bind_unary(Binder& b, bool backward, const char* saved) {
  const bool output_saved = std::string(saved) == "y";
  if (!backward) {
    b.bind("x", b.input(0));
    b.bind("y", b.own(TensorRole::kOutput));
    return;
  }
  b.bind(saved, output_saved ? b.own(TensorRole::kOutput) : b.input(0));
  b.bind("dy", b.own(TensorRole::kOutputGrad));
  b.bind("dx", b.input_grad(0));
}

// A kernel that maps its input to its result and back, reading nothing saved (pooling,
// (un)permuting, dropout with its mask): x -> y, dy -> dx.
void bind_one_to_one(Binder& b, bool backward) {
  if (!backward) {
    b.bind("x", b.input(0));
    b.bind("y", b.own(TensorRole::kOutput));
  } else {
    b.bind("dy", b.own(TensorRole::kOutputGrad));
    b.bind("dx", b.input_grad(0));
  }
}

// Elementwise kernels: a + b -> y over two inputs, or x + bias -> y. `three` says which,
// as kernels/ tells them apart (by the op's traffic).
void bind_elementwise(Binder& b, bool backward, bool three) {
  if (three) {
    // A second input, or the first read twice when the op names one.
    const size_t second = b.inputs() > 1 ? 1 : 0;
    if (!backward) {
      b.bind("a", b.input(0));
      b.bind("b", b.input(second));
      b.bind("y", b.own(TensorRole::kOutput));
    } else {
      b.bind("dy", b.own(TensorRole::kOutputGrad));
      b.bind("da", b.input_grad(0));
      if (second != 0) b.bind("db", b.input_grad(second));
    }
    return;
  }
  // The bias: the op's own, or a second input it scales or shifts by (the MoE combine's
  // routing weights), or the kernel's scratch.
  const bool own = b.has_params(), second = !own && b.inputs() > 1;
  if (!backward) {
    b.bind("x", b.input(0));
    if (own) b.bind("bias", b.own(TensorRole::kBias));
    if (second) b.bind("bias", b.input(1));
    b.bind("y", b.own(TensorRole::kOutput));
  } else {
    b.bind("dy", b.own(TensorRole::kOutputGrad));
    b.bind("dx", b.input_grad(0));
    if (own) b.bind("dbias", b.own(TensorRole::kBiasGrad));
    if (second) b.bind("dbias", b.input_grad(1));
  }
}

// Elements of one head-split part of a FlashAttention kernel's Q, K and V.
struct QkvSizes {
  int64_t q = 0;
  int64_t kv = 0;
};
QkvSizes qkv_sizes(const AttentionDims& a) {
  return {a.batch * a.heads * a.q_len * a.head_dim, a.batch * a.kv_heads * a.kv_len * a.head_dim};
}

}  // namespace

OpOperands bind_operands(const Workload& w, int layer, int op, const OpSignature& k) {
  const Op& o = w.layers[static_cast<size_t>(layer)].ops[static_cast<size_t>(op)];
  Binder b(w, layer, op);
  const bool bwd = k.pass != OpPass::kForward;
  const TensorRef out = b.own(TensorRole::kOutput), dout = b.own(TensorRole::kOutputGrad);
  switch (k.kind) {
    case KernelKind::kGemm:
    case KernelKind::kGroupedGemm:
      bind_gemm(
          b, k.pass,
          {b.own(TensorRole::kWeight), b.own(TensorRole::kWeightGrad), 0, o.gemm.transpose_b});
      break;
    case KernelKind::kBatchedGemm: {
      // Attention's QK^T reads K after Q in the QKV tensor; attention over V reads the
      // probabilities and V, after Q and K in the tensor it names second. The unfused
      // kernels' shapes count K and V per query head (grouped-query attention repeats them),
      // so V lies after a K of Q's size.
      const GemmDims f = forward_gemm(k, o.gemm.transpose_b);
      const bool two = b.inputs() > 1;
      const size_t second = two ? 1 : 0;
      const int64_t offset = two ? 2 * f.batch * f.k * f.n : f.batch * f.m * f.k;
      bind_gemm(b, k.pass, {b.input(second), b.input_grad(second), offset, o.gemm.transpose_b});
      break;
    }
    case KernelKind::kConv:
      bind_conv(b, k.pass);
      break;
    case KernelKind::kRouter:
      if (!bwd) {
        b.bind("x", b.input(0));
        b.bind("weight", b.own(TensorRole::kWeight));
        b.bind("probs", out);
      } else {
        b.bind("dprobs", dout);
        b.bind("probs", out);
        b.bind("x", b.input(0));
        b.bind("weight", b.own(TensorRole::kWeight));
        b.bind("dx", b.input_grad(0));
        b.bind("dweight", b.own(TensorRole::kWeightGrad));
      }
      break;
    case KernelKind::kLayerNorm:
      bind_norm(b, bwd, true, true);
      break;
    case KernelKind::kBatchNorm:
      bind_norm(b, bwd, true, true);
      break;
    case KernelKind::kRmsNorm:
      bind_norm(b, bwd, false, false);
      break;
    case KernelKind::kSoftmax:
      bind_unary(b, bwd, "y");
      break;
    case KernelKind::kGelu:
    case KernelKind::kRelu:
      bind_unary(b, bwd, "x");
      break;
    case KernelKind::kPool:
    case KernelKind::kPermute:
      bind_one_to_one(b, bwd);
      break;
    case KernelKind::kSwiglu: {
      // Gate and up from two GEMMs, or both halves of one (an expert's fc1).
      const bool two = b.inputs() > 1;
      const int64_t half = two ? 0 : k.rows * k.width;
      b.bind("gate", b.input(0));
      b.bind("up", b.input(two ? 1 : 0), half);
      if (!bwd) {
        b.bind("y", out);
      } else {
        b.bind("dy", dout);
        b.bind("dgate", b.input_grad(0));
        b.bind("dup", b.input_grad(two ? 1 : 0), half);
      }
      break;
    }
    case KernelKind::kDropout:
      bind_one_to_one(b, bwd);
      b.bind("mask", b.own(TensorRole::kMask));
      break;
    case KernelKind::kElementwise:
      bind_elementwise(b, bwd, elementwise_streams(k) == 3);
      break;
    case KernelKind::kEmbedding: {
      // Token ids stay the kernel's own: they index the rows it reads. A lookup after
      // another (positions, token types) is added to the tokens' embedding: it writes that
      // tensor (the CPU gather overwrites where a framework adds, with the same traffic), and
      // its gradient is that tensor's.
      const auto& ops = w.layers[static_cast<size_t>(layer)].ops;
      int first = op;
      while (first > 0 && ops[static_cast<size_t>(first) - 1].kernel == KernelKind::kEmbedding)
        --first;
      const TensorRef sum{TensorRole::kOutput, static_cast<uint32_t>(layer),
                          static_cast<uint32_t>(first)};
      const TensorRef sum_grad{TensorRole::kOutputGrad, sum.layer, sum.op};
      if (!bwd) {
        b.bind("table", b.own(TensorRole::kWeight));
        b.bind("y", sum);
      } else {
        b.bind("dy", sum_grad);
        b.bind("dtable", b.own(TensorRole::kWeightGrad));
      }
      break;
    }
    case KernelKind::kCrossEntropy:
      if (!bwd) {
        b.bind("logits", b.input(0));
        b.bind("probs", b.own(TensorRole::kProbs));
        b.bind("loss", out);
      } else {
        b.bind("probs", b.own(TensorRole::kProbs));
        b.bind("dlogits", b.input_grad(0));
      }
      break;
    case KernelKind::kFlashAttention: {
      // Q, K and V one after another in the QKV tensor; with rotary positions Q and K from
      // the rotated copy (its first input) and V from the projection's result (its second).
      const QkvSizes n = qkv_sizes(k.attention);
      const size_t v_from = b.inputs() > 1 ? 1 : 0;
      b.bind("q", b.input(0));
      b.bind("k", b.input(0), n.q);
      b.bind("v", b.input(v_from), n.q + n.kv);
      b.bind("o", out);
      b.bind("lse", b.own(TensorRole::kLse));
      if (bwd) {
        b.bind("do", dout);
        b.bind("dq", b.input_grad(0));
        b.bind("dk", b.input_grad(0), n.q);
        b.bind("dv", b.input_grad(v_from), n.q + n.kv);
      }
      break;
    }
    case KernelKind::kOptimizerUpdate:
      return optimizer_operands();
    case KernelKind::kCast:
    case KernelKind::kCopy:
      break;
  }
  return b.take();
}

OpOperands optimizer_operands() {
  return {{"grad", {TensorRole::kGrads, 0, 0}, 0},
          {"param", {TensorRole::kParams, 0, 0}, 0},
          {"m", {TensorRole::kMoment1, 0, 0}, 0},
          {"v", {TensorRole::kMoment2, 0, 0}, 0}};
}

}  // namespace dtsim::models
