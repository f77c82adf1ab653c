// Per-chunk costs: every op split as the rank's shard says and priced by the cost model.
#include "models/chunk_cost.h"

#include <algorithm>
#include <cmath>

#include "models/memory_model.h"

namespace dtsim::models {

namespace {

int64_t scaled(int64_t dim, double factor) {
  return std::max<int64_t>(1, std::llround(static_cast<double>(dim) * factor));
}

// The fraction of the whole op a rank computes along the tensor-parallel dimension.
double tensor_fraction(TensorSplit split, const RankShard& s) {
  switch (split) {
    case TensorSplit::kReplicated: return 1;
    case TensorSplit::kSequence: return s.sequence_parallel ? s.tp_share : 1;
    case TensorSplit::kColumn:
    case TensorSplit::kRow:
    case TensorSplit::kHeads:
    case TensorSplit::kVocab: return s.tp_share;
  }
  return 1;
}

// Transformer Engine runs the Linear layers' GEMMs in FP8; the output layer (vocabulary
// logits), attention (FlashAttention), convolutions and the rest keep 16-bit math.
bool fp8_linear(const Op& op, DType math) {
  return math == DType::kFp8 && op.kind == OpKind::kMatmul && op.split != TensorSplit::kVocab;
}

// The casts exist only where the GEMMs really run on FP8 tensor cores.
bool casts_to_fp8(const Op& op, DType math, const DeviceSpec& device) {
  return fp8_linear(op, math) && device.peak_for(DType::kFp8).flops_per_second() > 0;
}

DType op_dtype(const Op& op, DType math) {
  return math == DType::kFp8 && !fp8_linear(op, math) ? DType::kBf16 : math;
}

// An FP8 Linear's input is cast to FP8 before its GEMM, with a transposed copy for the
// weight-gradient GEMM (2 bytes read, 2 x 1 written per element), and in the backward pass
// its output gradient likewise: memory-bound kernels of their own, priced on the rank's
// share of the GEMM (`gemm`, already split). Under sequence parallelism the full-sequence
// tensors (a column-parallel input, a row-parallel output gradient) are cast as this
// rank's sequence shard, before they are gathered in FP8.
OpInstance fp8_cast(const Op& op, const GemmShape& gemm, bool backward, const RankShard& shard) {
  OpInstance cast;
  cast.kind = OpKind::kElementwise;
  cast.dtype = DType::kBf16;
  cast.backward = backward;
  const bool gathered = backward ? op.split == TensorSplit::kRow : op.split == TensorSplit::kColumn;
  const double share = gathered && shard.sequence_parallel ? shard.tp_share : 1.0;
  const double rows = static_cast<double>(gemm.m) * static_cast<double>(gemm.batch) * share;
  cast.bytes = 4.0 * rows * static_cast<double>(backward ? gemm.n : gemm.k);
  return cast;
}

}  // namespace

OpInstance split_op(const Op& op, bool backward, const RankShard& shard, DType dtype) {
  OpInstance out;
  out.kind = op.kind;
  out.dtype = dtype;
  out.backward = backward;
  const double f = tensor_fraction(op.split, shard);
  // Context parallelism splits every op along the tokens; attention keeps all keys.
  const double tokens = 1.0 / shard.cp;
  out.gemm = op.gemm;
  if (op.gemm.m > 0) {
    switch (op.split) {
      case TensorSplit::kColumn:
      case TensorSplit::kVocab: out.gemm.n = scaled(op.gemm.n, f); break;
      case TensorSplit::kRow: out.gemm.k = scaled(op.gemm.k, f); break;
      case TensorSplit::kHeads: out.gemm.batch = scaled(op.gemm.batch, f); break;
      case TensorSplit::kSequence: out.gemm.m = scaled(op.gemm.m, f); break;
      case TensorSplit::kReplicated: break;
    }
    out.gemm.m = scaled(out.gemm.m, tokens);
  }
  const double share = f * tokens;
  out.flops = (backward ? op.bwd_flops : op.fwd_flops) * share * op.executed_fraction;
  out.bytes = (backward ? op.bwd_bytes : op.fwd_bytes) * share;
  return out;
}

double local_params(const Op& op, const RankShard& shard) {
  const bool split = op.split != TensorSplit::kReplicated && op.split != TensorSplit::kSequence;
  double p = static_cast<double>(op.params) * (split ? shard.tp_share : 1.0);
  if (op.expert) p /= shard.ep;
  return p;
}

ChunkCost chunk_cost(const Workload& w, int begin, int end, const RankShard& shard,
                     Recompute recompute, const DeviceSpec& device, const CostModel& costs) {
  ChunkCost out;
  const DType dtype = math_dtype(w.shape.precision);
  const ActivationSplit act_split{shard.tp, shard.sequence_parallel, shard.cp};
  const double cp_tokens = 1.0 / shard.cp;
  for (int i = begin; i < end; ++i) {
    const Layer& layer = w.layers[i];
    Duration fwd;
    Duration bwd;
    double dense = 0;
    double expert = 0;
    std::vector<double> tensors;
    for (const Op& op : layer.ops) {
      const OpInstance forward = split_op(op, false, shard, op_dtype(op, dtype));
      Duration f = costs.op_time(forward, device);
      bwd += costs.op_time(split_op(op, true, shard, op_dtype(op, dtype)), device);
      if (casts_to_fp8(op, dtype, device)) {
        f += costs.op_time(fp8_cast(op, forward.gemm, false, shard), device);
        bwd += costs.op_time(fp8_cast(op, forward.gemm, true, shard), device);
      }
      fwd += f;
      // Recomputation runs forward kernels again inside the backward pass.
      if (recompute == Recompute::kFull || (recompute == Recompute::kSelective && op.attention_core)) {
        bwd += f;
      }
      (op.expert ? expert : dense) += local_params(op, shard);
      if (!op.expert && op.params > 0) tensors.push_back(local_params(op, shard));
    }
    const double input_bytes = i > 0 ? w.layers[i - 1].output_bytes : 0;
    const double kept = layer_activation_bytes(layer, input_bytes, recompute, act_split);
    out.activation_bytes += kept;
    if (recompute != Recompute::kNone) {
      const double whole = layer_activation_bytes(layer, input_bytes, Recompute::kNone, act_split);
      out.recompute_transient_bytes = std::max(out.recompute_transient_bytes, whole - kept);
    }
    out.fwd += fwd;
    out.bwd += bwd;
    out.layer_fwd.push_back(fwd);
    out.layer_bwd.push_back(bwd);
    out.layer_dense_params.push_back(dense);
    out.layer_expert_params.push_back(expert);
    out.layer_dense_tensors.push_back(std::move(tensors));
    out.dense_params += dense;
    out.expert_params += expert;
    out.tp_calls_fwd += layer.tp_comms_fwd;
    // Full recomputation runs the forward again, tensor-parallel all-reduces included.
    const int recomputed = recompute == Recompute::kFull ? layer.tp_comms_fwd : 0;
    out.tp_calls_bwd += layer.tp_comms_bwd + recomputed;
    out.tp_bytes_fwd += layer.tp_comms_fwd * layer.tp_comm_bytes * cp_tokens;
    out.tp_bytes_bwd += (layer.tp_comms_bwd + recomputed) * layer.tp_comm_bytes * cp_tokens;
    out.kv_bytes += layer.kv_bytes * shard.tp_share;  // keys and values split by heads
    out.all_to_all_bytes += 2 * layer.moe_all_to_all_bytes * cp_tokens;
  }
  out.output_bytes = end > begin ? w.layers[end - 1].output_bytes : 0;
  return out;
}

}  // namespace dtsim::models
