// What one kernel of a compute task is: its kind, full shapes, operand layouts, dtypes,
// pass and flags, with the work the workload model counts for it. Cost models price it
// (sim/cost_model.h); a real executor (kernels/) runs it. Both read this header alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/dtype.h"

namespace dtsim {

// The kernel, kind and variant in one: FlashAttention and the unfused attention's batched
// GEMMs are different kernels, as LayerNorm and RMSNorm are.
enum class KernelKind : uint8_t {
  kGemm,            // C[m, n] = op(A)[m, k] op(B)[k, n]
  kBatchedGemm,     // `batch` independent GEMMs of one shape (unfused attention's QK^T, PV)
  kFlashAttention,  // QK^T, softmax and PV in one kernel (Dao et al. 2022)
  kConv,            // 2-D convolution (its implicit GEMM is in `gemm`)
  kLayerNorm,
  kRmsNorm,
  kBatchNorm,
  kSoftmax,
  kGelu,
  kSwiglu,
  kRelu,
  kDropout,
  kElementwise,   // any other pointwise kernel (bias, residual add, rotary, tanh, combine)
  kEmbedding,     // a gather of `rows` rows of `width` from a table
  kCrossEntropy,  // softmax with the loss over `rows` x `width` logits
  kRouter,        // MoE gating: scores, top-k
  kPool,
  kOptimizerUpdate,  // one optimizer step over `width` parameters
  kCast,             // dtype conversion (to FP8 before an FP8 GEMM)
  kCopy,             // device copy of `bytes`
  // `batch` GEMMs of one weight each over the rows routed to them (MoE experts: one grouped
  // kernel over the rank's experts, as Megatron-LM's GroupedMLP and Transformer Engine run
  // them); `gemm` is one group's shape with the mean rows per group.
  kGroupedGemm,
  kPermute,  // MoE token (un)permute: `rows` rows of `width` gathered into another order
};
// The last kind, for loops over all of them.
inline constexpr KernelKind kLastKernelKind = KernelKind::kPermute;
std::string_view kernel_kind_name(KernelKind k);
std::optional<KernelKind> kernel_kind_from_name(std::string_view name);

// Which pass of training the kernel belongs to. A GEMM's (or convolution's) backward is two
// kernels with their own shapes: the data (input) gradient and the weight gradient. Other
// kernels compute all of their gradients in one backward kernel.
enum class OpPass : uint8_t { kForward, kBackwardData, kBackwardWeight, kBackward, kStep };
std::string_view op_pass_name(OpPass p);
std::optional<OpPass> op_pass_from_name(std::string_view name);

// Row-major operands: op(X) is X or, with the flag, X transposed. A linear layer's forward
// multiplies by its [out, in] weight transposed (transpose_b), as PyTorch's nn.Linear does.
struct GemmDims {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  bool transpose_a = false;
  bool transpose_b = false;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
           static_cast<double>(batch);
  }
  bool operator==(const GemmDims&) const = default;
};

// A convolution over n images of c channels, h x w, with k filters of r x s.
struct ConvDims {
  int64_t n = 0;
  int64_t c = 0;
  int64_t h = 0;
  int64_t w = 0;
  int64_t k = 0;
  int64_t r = 0;
  int64_t s = 0;
  int32_t stride = 1;
  int32_t padding = 0;
  bool operator==(const ConvDims&) const = default;
};

// Attention of `heads` query heads over `kv_heads` key-value heads (grouped-query attention
// when fewer), `q_len` queries against `kv_len` keys each; `window` keys back with a
// sliding window (0: the whole prefix, or everything when not causal).
struct AttentionDims {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t q_len = 0;
  int64_t kv_len = 0;
  int64_t window = 0;
  bool operator==(const AttentionDims&) const = default;
};

struct OpSignature {
  std::string name;  // the model's name for the op ("attn.qkv", "conv2_1.a")
  KernelKind kind = KernelKind::kElementwise;
  OpPass pass = OpPass::kForward;
  DType storage = DType::kBf16;     // operands and results in memory
  DType math = DType::kBf16;        // what the units multiply in (tf32, fp8, ...)
  DType accumulate = DType::kFp32;  // what they sum in
  GemmDims gemm;                    // GEMMs, batched GEMMs, convolutions (implicit GEMM)
  ConvDims conv;                    // convolutions
  AttentionDims attention;          // FlashAttention
  // Pointwise, norm, softmax, embedding, loss and optimizer kernels: `rows` rows of
  // `width` elements (a norm's tokens x hidden; the optimizer: 1 x its parameters).
  int64_t rows = 0;
  int64_t width = 0;
  bool causal = false;
  bool recomputed = false;      // a forward kernel run again inside the backward pass
  bool attention_core = false;  // part of attention (its GEMMs run below a plain GEMM's rate)
  // The work as the workload model counts it for this kernel: FLOPs it executes (causal
  // FlashAttention skips the masked tiles) and bytes it moves to and from device memory.
  double flops = 0;
  double bytes = 0;

  bool operator==(const OpSignature&) const = default;
};

size_t hash_value(const OpSignature& op);

// How many tensors a pointwise kernel (kElementwise) streams, as its traffic says: 3 for
// a + b -> y (a residual add), 2 for x (+ bias) -> y. Kernels run it so, and operand
// bindings follow it.
int elementwise_streams(const OpSignature& op);

// The two backward GEMMs of a forward GEMM C = op(A) op(B) [m, n, k]: the data gradient
// dA[m, k] = dC op(B)^T, and the weight gradient in the layout of B (B[n, k] when the
// forward transposed it, as a linear layer's weight, else B[k, n]).
GemmDims backward_data_gemm(const GemmDims& forward);
GemmDims backward_weight_gemm(const GemmDims& forward);

}  // namespace dtsim
