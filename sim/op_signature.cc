// Names of kernel kinds and passes, the signature's hash, and the backward GEMMs' shapes.
#include "sim/op_signature.h"

#include <array>
#include <functional>
#include <utility>

namespace dtsim {

namespace {

constexpr std::array<std::pair<KernelKind, std::string_view>, 22> kKernelNames{{
    {KernelKind::kGemm, "gemm"},
    {KernelKind::kBatchedGemm, "batched_gemm"},
    {KernelKind::kFlashAttention, "flash_attention"},
    {KernelKind::kConv, "conv"},
    {KernelKind::kLayerNorm, "layer_norm"},
    {KernelKind::kRmsNorm, "rms_norm"},
    {KernelKind::kBatchNorm, "batch_norm"},
    {KernelKind::kSoftmax, "softmax"},
    {KernelKind::kGelu, "gelu"},
    {KernelKind::kSwiglu, "swiglu"},
    {KernelKind::kRelu, "relu"},
    {KernelKind::kDropout, "dropout"},
    {KernelKind::kElementwise, "elementwise"},
    {KernelKind::kEmbedding, "embedding"},
    {KernelKind::kCrossEntropy, "cross_entropy"},
    {KernelKind::kRouter, "router"},
    {KernelKind::kPool, "pool"},
    {KernelKind::kOptimizerUpdate, "optimizer_update"},
    {KernelKind::kCast, "cast"},
    {KernelKind::kCopy, "copy"},
    {KernelKind::kGroupedGemm, "grouped_gemm"},
    {KernelKind::kPermute, "permute"},
}};

constexpr std::array<std::pair<OpPass, std::string_view>, 5> kPassNames{{
    {OpPass::kForward, "forward"},
    {OpPass::kBackwardData, "backward_data"},
    {OpPass::kBackwardWeight, "backward_weight"},
    {OpPass::kBackward, "backward"},
    {OpPass::kStep, "step"},
}};

// boost::hash_combine's mixing step.
void mix(size_t& seed, size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

}  // namespace

std::string_view kernel_kind_name(KernelKind k) {
  for (const auto& [kind, name] : kKernelNames) {
    if (kind == k) return name;
  }
  return "?";
}

std::optional<KernelKind> kernel_kind_from_name(std::string_view name) {
  for (const auto& [kind, n] : kKernelNames) {
    if (n == name) return kind;
  }
  return std::nullopt;
}

std::string_view op_pass_name(OpPass p) {
  for (const auto& [pass, name] : kPassNames) {
    if (pass == p) return name;
  }
  return "?";
}

std::optional<OpPass> op_pass_from_name(std::string_view name) {
  for (const auto& [pass, n] : kPassNames) {
    if (n == name) return pass;
  }
  return std::nullopt;
}

size_t hash_value(const OpSignature& op) {
  size_t h = std::hash<std::string>{}(op.name);
  const auto i = [&](int64_t v) { mix(h, std::hash<int64_t>{}(v)); };
  i(static_cast<int64_t>(op.kind) | static_cast<int64_t>(op.pass) << 8 |
    static_cast<int64_t>(op.storage) << 16 | static_cast<int64_t>(op.math) << 24 |
    static_cast<int64_t>(op.accumulate) << 32 | static_cast<int64_t>(op.causal) << 40 |
    static_cast<int64_t>(op.recomputed) << 41 | static_cast<int64_t>(op.attention_core) << 42 |
    static_cast<int64_t>(op.gemm.transpose_a) << 43 |
    static_cast<int64_t>(op.gemm.transpose_b) << 44);
  for (int64_t v : {op.gemm.m,
                    op.gemm.n,
                    op.gemm.k,
                    op.gemm.batch,
                    op.conv.n,
                    op.conv.c,
                    op.conv.h,
                    op.conv.w,
                    op.conv.k,
                    op.conv.r,
                    op.conv.s,
                    int64_t{op.conv.stride},
                    int64_t{op.conv.padding},
                    op.attention.batch,
                    op.attention.heads,
                    op.attention.kv_heads,
                    op.attention.head_dim,
                    op.attention.q_len,
                    op.attention.kv_len,
                    op.attention.window,
                    op.rows,
                    op.width}) {
    i(v);
  }
  mix(h, std::hash<double>{}(op.flops));
  mix(h, std::hash<double>{}(op.bytes));
  return h;
}

int elementwise_streams(const OpSignature& op) {
  const double elements = static_cast<double>(op.rows) * static_cast<double>(op.width);
  if (elements <= 0) return 2;
  // The backward pass moves twice the forward's traffic (zoo::memory_bound_op).
  const double per_pass = op.pass == OpPass::kForward ? op.bytes : op.bytes / 2;
  const double streams = per_pass / (elements * dtype_size_bytes(op.storage));
  return streams >= 2.5 ? 3 : 2;
}

GemmDims backward_data_gemm(const GemmDims& f) {
  // dA[m, k] = dC[m, n] op(B)^T: B as stored when the forward transposed it.
  return GemmDims{f.m, f.k, f.n, f.batch, false, !f.transpose_b};
}

GemmDims backward_weight_gemm(const GemmDims& f) {
  // B stored [n, k]: dB = dC^T[n, m] A[m, k]; stored [k, n]: dB = A^T[k, m] dC[m, n].
  if (f.transpose_b) return GemmDims{f.n, f.k, f.m, f.batch, true, false};
  return GemmDims{f.k, f.n, f.m, f.batch, true, false};
}

}  // namespace dtsim
