// run_cpu: the op's kind and pass pick the kernel; its operands are in cpu_operands' order.
#include <cstring>

#include "kernels/cpu_kernels.h"
#include "kernels/kernel.h"

namespace dtsim::kernels {

void run_cpu(const OpSignature& op, OperandBuffers& b) {
  // The buffers' constructor sized them (and refused an unsupported op).
  if (!(b.made_for() == op)) {
    throw std::invalid_argument("run_cpu: buffers made for another op than \"" + op.name + "\"");
  }
  const auto f = [&](size_t i) { return b.as<float>(i); };
  const auto n = [&](size_t i) { return b.as<int32_t>(i); };
  const int64_t r = op.rows, w = op.width, e = r * w;
  const bool bwd = op.pass != OpPass::kForward;
  switch (op.kind) {
    case KernelKind::kGemm:
    case KernelKind::kBatchedGemm:
    case KernelKind::kGroupedGemm:
      // A grouped GEMM's groups hold the mean rows each: equal groups, as a batched GEMM
      // whose operands are the experts' weights (their gradients accumulate, as a linear
      // layer's do).
      cpu::gemm(op.gemm, op.pass == OpPass::kBackwardWeight && op.kind != KernelKind::kBatchedGemm,
                f(0), f(1), f(2));
      return;
    case KernelKind::kLayerNorm:
      if (!bwd) return cpu::layer_norm_forward(r, w, f(0), f(1), f(2), f(3), f(4), f(5));
      return cpu::layer_norm_backward(r, w, f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7));
    case KernelKind::kRmsNorm:
      if (!bwd) return cpu::rms_norm_forward(r, w, f(0), f(1), f(2), f(3));
      return cpu::rms_norm_backward(r, w, f(0), f(1), f(2), f(3), f(4), f(5));
    case KernelKind::kSoftmax:
      if (!bwd) return cpu::softmax_forward(r, w, f(0), f(1));
      return cpu::softmax_backward(r, w, f(0), f(1), f(2));
    case KernelKind::kGelu:
      if (!bwd) return cpu::gelu_forward(e, f(0), f(1));
      return cpu::gelu_backward(e, f(0), f(1), f(2));
    case KernelKind::kRelu:
      if (!bwd) return cpu::relu_forward(e, f(0), f(1));
      return cpu::relu_backward(e, f(0), f(1), f(2));
    case KernelKind::kSwiglu:
      if (!bwd) return cpu::swiglu_forward(e, f(0), f(1), f(2));
      return cpu::swiglu_backward(e, f(0), f(1), f(2), f(3), f(4));
    case KernelKind::kDropout:
      if (!bwd) return cpu::dropout_forward(e, f(0), f(1), b.as<uint8_t>(2));
      return cpu::dropout_backward(e, f(0), b.as<uint8_t>(1), f(2));
    case KernelKind::kElementwise:
      if (elementwise_streams(op) == 3) {
        if (!bwd) return cpu::add_forward(e, f(0), f(1), f(2));
        return cpu::add_backward(e, f(0), f(1), f(2));
      }
      if (!bwd) return cpu::bias_forward(r, w, f(0), f(1), f(2));
      return cpu::bias_backward(r, w, f(0), f(1), f(2));
    case KernelKind::kEmbedding:
    case KernelKind::kPermute:
      if (!bwd) return cpu::embedding_forward(r, w, f(0), n(1), f(2));
      return cpu::embedding_backward(r, w, f(0), n(1), f(2));
    case KernelKind::kCrossEntropy:
      if (!bwd) return cpu::cross_entropy_forward(r, w, f(0), n(1), f(2), f(3));
      return cpu::cross_entropy_backward(r, w, f(0), n(1), f(2));
    case KernelKind::kOptimizerUpdate:
      return cpu::adamw_step(e, f(0), f(1), f(2), f(3));
    case KernelKind::kCopy:
      std::memcpy(b.data(1), b.data(0), static_cast<size_t>(b.spec(0).elements));
      return;
    case KernelKind::kBatchNorm:
      if (!bwd) return cpu::batch_norm_forward(r, w, f(0), f(1), f(2), f(3), f(4), f(5));
      return cpu::batch_norm_backward(r, w, f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7));
    case KernelKind::kFlashAttention:
      if (!bwd)
        return cpu::flash_attention_forward(op.attention, op.causal, f(0), f(1), f(2), f(3), f(4));
      return cpu::flash_attention_backward(op.attention, op.causal, f(0), f(1), f(2), f(3), f(4),
                                           f(5), f(6), f(7), f(8));
    case KernelKind::kConv:
      if (op.pass == OpPass::kBackwardData)
        return cpu::conv_backward_data(op.conv, f(0), f(1), f(2), f(3));
      if (op.pass == OpPass::kBackwardWeight) {
        return cpu::conv_backward_weight(op.conv, f(0), f(1), f(2), f(3));
      }
      return cpu::conv_forward(op.conv, f(0), f(1), f(2), f(3));
    case KernelKind::kPool:
      if (!bwd) return cpu::pool_forward(r, pool_input_width(op), w, pool_window(op), f(0), f(1));
      return cpu::pool_backward(r, pool_input_width(op), w, f(0), f(1));
    case KernelKind::kRouter: {
      const GemmDims& g = op.gemm;  // logits[m, n] = x[m, k] W[n, k]^T
      if (!bwd) {
        cpu::gemm(GemmDims{g.m, g.n, g.k, 1, false, true}, false, f(0), f(1), f(2));
        return cpu::softmax_forward(g.m, g.n, f(2), f(2));
      }
      cpu::softmax_backward(g.m, g.n, f(1), f(0), f(6));
      cpu::gemm(GemmDims{g.m, g.k, g.n, 1, false, false}, false, f(6), f(3), f(4));  // dx = dl W
      cpu::gemm(GemmDims{g.n, g.k, g.m, 1, true, false}, true, f(6), f(2), f(5));    // dW += dl^T x
      return;
    }
    case KernelKind::kCast:
      return cpu::cast_to_fp8(r, w, b.as<uint16_t>(0), b.as<uint8_t>(1), b.as<uint8_t>(2));
    default:
      break;
  }
  throw UnsupportedOp(cpu_unsupported_reason(op));
}

}  // namespace dtsim::kernels
