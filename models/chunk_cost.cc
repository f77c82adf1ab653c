// Per-chunk costs: every op split as the rank's shard says and priced by the cost model.
#include "models/chunk_cost.h"

#include <algorithm>
#include <cmath>

#include "models/memory_model.h"
#include "models/operand_binding.h"

namespace dtsim::models {

namespace {

int64_t scaled(int64_t dim, double factor) {
  return std::max<int64_t>(1, std::llround(static_cast<double>(dim) * factor));
}

// The fraction of the whole op a rank computes along the tensor-parallel dimension.
double tensor_fraction(TensorSplit split, const RankShard& s, bool expert = false) {
  if (expert && (split == TensorSplit::kColumn || split == TensorSplit::kRow))
    return s.expert_share();
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
OpSignature fp8_cast(const Op& op, const GemmDims& gemm, bool backward, const RankShard& shard) {
  OpSignature cast;
  cast.name = op.name + ".cast_fp8";
  cast.kind = KernelKind::kCast;
  cast.pass = backward ? OpPass::kBackward : OpPass::kForward;
  cast.storage = DType::kBf16;
  cast.math = DType::kFp32;
  // The experts' rows come from the token dispatcher, not from a sequence-parallel gather.
  const bool gathered =
      !op.expert && (backward ? op.split == TensorSplit::kRow : op.split == TensorSplit::kColumn);
  const double share = gathered && shard.sequence_parallel ? shard.tp_share : 1.0;
  const double rows = static_cast<double>(gemm.m) * static_cast<double>(gemm.batch) * share;
  cast.rows = std::llround(rows);
  cast.width = backward ? gemm.n : gemm.k;
  cast.bytes = 4.0 * rows * static_cast<double>(cast.width);
  return cast;
}

// The op's split shape and work for one pass, as one kernel with the forward's GEMM shape.
OpSignature split_kernel(const Op& op, bool backward, const RankShard& shard, DType math,
                         const DeviceSpec& device) {
  OpSignature out;
  out.name = op.name;
  out.kind = op.kernel;
  out.pass = backward ? OpPass::kBackward : OpPass::kForward;
  out.attention_core = op.attention_core;
  out.causal = op.causal;
  const DType dtype = op_dtype(op, math);
  const bool gemm_like = is_gemm_like(op.kernel);
  out.storage = casts_to_fp8(op, math, device) ? DType::kFp8
                : dtype == DType::kFp8         ? DType::kBf16
                                               : storage_dtype(dtype);
  out.math = gemm_like ? gemm_math_dtype(dtype, device) : DType::kFp32;
  out.accumulate = DType::kFp32;
  const double f = tensor_fraction(op.split, shard, op.expert);
  // Context parallelism splits every op along the tokens; attention keeps all keys.
  const double tokens = 1.0 / shard.cp;
  GemmShape g = op.gemm;
  if (g.m > 0) {
    switch (op.split) {
      case TensorSplit::kColumn:
      case TensorSplit::kVocab:
        g.n = scaled(g.n, f);
        break;
      case TensorSplit::kRow:
        g.k = scaled(g.k, f);
        break;
      case TensorSplit::kHeads:
        g.batch = scaled(g.batch, f);
        break;
      case TensorSplit::kSequence:
        g.m = scaled(g.m, f);
        break;
      case TensorSplit::kReplicated: break;
    }
    g.m = scaled(g.m, tokens);
  }
  out.gemm = g;
  out.conv = op.conv;
  if (op.kernel == KernelKind::kFlashAttention) {
    out.attention = op.attention;
    out.attention.heads = scaled(op.attention.heads, f);
    out.attention.kv_heads = scaled(op.attention.kv_heads, f);
    out.attention.q_len = scaled(op.attention.q_len, tokens);
  }
  if (op.rows > 0) {
    // A vocabulary-parallel lookup gathers whole rows of its shard of the table for every
    // token (and masks the rest): neither its rows nor its width divide.
    const bool splits_rows = op.split == TensorSplit::kHeads || op.split == TensorSplit::kSequence;
    const bool whole_rows = op.kernel == KernelKind::kEmbedding;
    out.rows = scaled(op.rows, (splits_rows ? f : 1.0) * tokens);
    out.width = splits_rows || whole_rows ? op.width : scaled(op.width, f);
  }
  // Experts: the rank runs its ep-th of them on the rows the group sends them (and its
  // expert-tensor-parallel peers gather), the busiest rank expert_load times the mean.
  const double load = op.expert ? shard.expert_load * shard.expert_rows() : 1.0;
  if (op.rows > 0 && op.expert) out.rows = scaled(out.rows, load);
  const double share = f * tokens * load;
  out.flops = (backward ? op.bwd_flops : op.fwd_flops) * share * op.executed_fraction;
  out.bytes = (backward ? op.bwd_bytes : op.fwd_bytes) * share;
  if (op.kernel == KernelKind::kGroupedGemm) {
    // `rows` holds the whole op's routed rows: the rank's experts get its share of them
    // (the group sends a rank as many as it sends), the busiest rank `load` times that,
    // spread over its ep-th of the experts, each group their mean.
    const double rank_rows = static_cast<double>(op.rows) * tokens * load;
    out.gemm.batch = std::max<int64_t>(1, op.gemm.batch / shard.ep);
    out.gemm.m = std::max<int64_t>(1, std::llround(rank_rows / static_cast<double>(out.gemm.batch)));
    out.rows = 0;
    out.width = 0;
    // It reads the rows and the weights of the experts that get any, and writes its output.
    const double experts = std::min(static_cast<double>(out.gemm.batch), std::max(1.0, rank_rows));
    const double n = static_cast<double>(out.gemm.n);
    const double k = static_cast<double>(out.gemm.k);
    const double elements = rank_rows * k + experts * k * n + rank_rows * n;
    out.bytes = elements * dtype_size_bytes(out.storage) * (backward ? 2 : 1);
  }
  return out;
}

// A layer pass's collectives at their kernel positions (see PassComm): the forward's at
// their boundaries; the backward's first those of the recomputed forward (a forward
// collective runs again when the op before or after it is rerun: full recomputation reruns
// them all, a checkpointed MLP its TP reduce, a checkpointed MoE layer its all-to-alls, a
// recomputed attention core its context-parallel gather), then at their boundaries among
// the gradients, from the last op down.
std::vector<PassComm> pass_comms(const Layer& layer, const RankShard& shard, bool backward,
                                 const std::vector<bool>& rerun_op, const std::vector<int>& fwd_before,
                                 const std::vector<int>& rerun_before,
                                 const std::vector<int>& grad_after) {
  const double cp_tokens = 1.0 / shard.cp;
  const double tp_bytes = layer.tp_comm_bytes * cp_tokens;
  // A rank dispatches its sequence shard's routed copies; the busiest rank receives
  // expert_load times the mean, and the exchange waits for it. The expert-tensor-parallel
  // gather joins etp such shards (every tensor-parallel rank's when etp = tp).
  const double ep_bytes =
      layer.moe_all_to_all_bytes * cp_tokens * shard.local_tokens() * shard.expert_load;
  const double etp_bytes =
      layer.moe_all_to_all_bytes * cp_tokens * shard.expert_rows() * shard.expert_load;
  const double kv_bytes = layer.kv_bytes * shard.tp_share;  // keys and values split by heads
  std::vector<PassComm> out;
  const auto add = [&](PassComm::Kind kind, int after, double bytes, bool recomputed = false) {
    out.push_back(PassComm{kind, after, bytes, recomputed});
  };
  // The dispatch (before the experts, the first of ep_at) and the combine (after them),
  // each an all-to-all over the expert-parallel group and an expert-tensor-parallel
  // collective inside it: gathered after the dispatch, scattered before the combine; the
  // gradients run them in reverse order with the gather and the scatter swapped.
  const auto dispatch = [&](int b, int after, bool gradients, bool recomputed) {
    const bool into_experts = b == layer.ep_at.front();
    const bool gather = into_experts != gradients;
    const PassComm::Kind etp = gather ? PassComm::Kind::kEtpGather : PassComm::Kind::kEtpScatter;
    if (gather) add(PassComm::Kind::kEp, after, ep_bytes, recomputed);
    if (shard.expert_tp() > 1) add(etp, after, etp_bytes, recomputed);
    if (!gather) add(PassComm::Kind::kEp, after, ep_bytes, recomputed);
  };
  if (!backward) {
    for (int b : layer.tp_fwd_at) add(PassComm::Kind::kTp, fwd_before[b], tp_bytes);
    for (int b : layer.ep_at) dispatch(b, fwd_before[b], false, false);
    if (layer.cp_at >= 0) add(PassComm::Kind::kCp, fwd_before[layer.cp_at], kv_bytes);
  } else {
    // A collective between a rerun op and its neighbour runs again: a reduce after the op
    // that produced its input, a gather (context parallelism's keys and values, the MoE
    // dispatch) before the op that reads it.
    const auto reruns = [&](int b) {
      const auto at = [&](int o) {
        return o >= 0 && o < static_cast<int>(rerun_op.size()) && rerun_op[static_cast<size_t>(o)];
      };
      return at(b - 1) || at(b);
    };
    for (int b : layer.tp_fwd_at) {
      if (reruns(b)) add(PassComm::Kind::kTp, rerun_before[b], tp_bytes, true);
    }
    for (int b : layer.ep_at) {
      if (reruns(b)) dispatch(b, rerun_before[b], false, true);
    }
    if (layer.cp_at >= 0 && reruns(layer.cp_at)) {
      add(PassComm::Kind::kCp, rerun_before[layer.cp_at], kv_bytes, true);
    }
    const int rerun = rerun_before.back();
    for (int b : layer.tp_bwd_at) add(PassComm::Kind::kTp, rerun + grad_after[b], tp_bytes);
    for (int b : layer.ep_at) dispatch(b, rerun + grad_after[b], true, false);
    if (layer.cp_at >= 0) add(PassComm::Kind::kCp, rerun + grad_after[layer.cp_at], kv_bytes);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PassComm& a, const PassComm& b) { return a.after < b.after; });
  return out;
}

}  // namespace

std::vector<CollectiveOp> tp_exchange_ops(bool sequence_parallel) {
  if (sequence_parallel) return {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather};
  return {CollectiveOp::kAllReduce};
}

std::vector<OpSignature> op_kernels(const Op& op, bool backward, const RankShard& shard, DType math,
                                    const DeviceSpec& device) {
  OpSignature k = split_kernel(op, backward, shard, math, device);
  std::vector<OpSignature> out;
  const bool fp8 = casts_to_fp8(op, math, device);
  if (fp8) out.push_back(fp8_cast(op, k.gemm, backward, shard));
  // GEMMs and convolutions (FlashAttention has a backward kernel of its own): the data
  // gradient and the weight (or second operand's) gradient, each half of the backward's
  // work (2mnk FLOPs and the forward's traffic each).
  const bool two_gemms = k.kind == KernelKind::kGemm || k.kind == KernelKind::kBatchedGemm ||
                         k.kind == KernelKind::kGroupedGemm || k.kind == KernelKind::kConv;
  if (backward && two_gemms) {
    OpSignature data = k;
    data.pass = OpPass::kBackwardData;
    data.gemm = backward_data_gemm(k.gemm);
    data.flops /= 2;
    data.bytes /= 2;
    OpSignature weight = data;
    weight.pass = OpPass::kBackwardWeight;
    weight.gemm = backward_weight_gemm(k.gemm);
    out.push_back(std::move(data));
    out.push_back(std::move(weight));
  } else {
    out.push_back(std::move(k));
  }
  return out;
}

PricedOp price_op(const OpSignature& op, const DeviceSpec& device, const CostModel& costs) {
  return PricedOp{op, costs.price(op, device), device.efficiency.kernel_launch, {}};
}

Duration total_time(const PricedOps& ops) {
  Duration t;
  for (const PricedOp& p : ops) t += p.total();
  return t;
}

CostTally tally_of(const PricedOps& ops) {
  CostTally t;
  for (const PricedOp& p : ops) {
    CostTally::Share& s = t.of(p.cost.source);
    ++s.ops;
    s.time += p.cost.time;
    ++t.launches.ops;
    t.launches.time += p.launch;
  }
  return t;
}

double local_params(const Op& op, const RankShard& shard) {
  const bool split = op.split != TensorSplit::kReplicated && op.split != TensorSplit::kSequence;
  double p =
      static_cast<double>(op.params) * (split ? tensor_fraction(op.split, shard, op.expert) : 1.0);
  if (op.expert) p /= shard.ep;
  return p;
}

ChunkCost chunk_cost(const Workload& w, int begin, int end, const RankShard& shard,
                     RecomputePolicy recompute, const DeviceSpec& device, const CostModel& costs) {
  ChunkCost out;
  const DType dtype = math_dtype(w.shape.precision);
  const ActivationSplit act_split{shard.tp,          shard.sequence_parallel, shard.cp,
                                  shard.expert_load, shard.expert_tp(),       shard.expert_rows()};
  const bool full = recompute.mode == Recompute::kFull;
  const int group_size = std::max(1, recompute.num_layers);
  int blocks = 0;             // the chunk's blocks so far (full recomputation's layers)
  int offloaded_blocks = 0;   // activation offload's blocks so far
  double group_rebuilt = 0;   // what a uniform group rebuilds before its backward
  for (int i = begin; i < end; ++i) {
    const Layer& layer = w.layers[i];
    // Under full recomputation: whether this block is checkpointed, and whether it keeps
    // its input (a uniform group's first block does; the others are rebuilt from it).
    bool checkpointed = full && recomputed_by_full(layer.kind);
    bool keeps_input = true;
    if (checkpointed) {
      const int j = blocks++;
      if (recompute.method == RecomputeMethod::kBlock) {
        checkpointed = j < recompute.num_layers;
      } else {
        keeps_input = j % group_size == 0;
        if (keeps_input) group_rebuilt = 0;
      }
    }
    // A block that block-method full recomputation leaves out keeps everything.
    const RecomputePolicy layer_policy =
        full && !checkpointed ? RecomputePolicy{Recompute::kNone} : recompute;
    double dense = 0;
    double expert = 0;
    std::vector<double> tensors;
    PricedOps fwd_ops;
    PricedOps grad_ops;
    PricedOps rerun;  // by recomputation
    const size_t n = layer.ops.size();
    // Kernels before boundary b (between ops b - 1 and b): of the forward, of the
    // recomputed forward, and, counting from the last op, of the gradients.
    std::vector<int> fwd_before(n + 1, 0), rerun_before(n + 1, 0), grad_after(n + 1, 0);
    const bool rerun_all = checkpointed;
    std::vector<bool> rerun_op(n, false);
    for (size_t o = 0; o < n; ++o) {
      const Op& op = layer.ops[o];
      fwd_before[o] = static_cast<int>(fwd_ops.size());
      rerun_before[o] = static_cast<int>(rerun.size());
      rerun_op[o] = rerun_all || layer_policy.selects(op.rerun_by());
      for (const OpSignature& k : op_kernels(op, false, shard, dtype, device)) {
        fwd_ops.push_back(price_op(k, device, costs));
        fwd_ops.back().operands = bind_operands(w, i, static_cast<int>(o), k);
        // Recomputation runs forward kernels again inside the backward pass.
        if (rerun_op[o]) {
          rerun.push_back(fwd_ops.back());
          rerun.back().op.recomputed = true;
        }
      }
      (op.expert ? expert : dense) += local_params(op, shard);
      if (!op.expert) out.dense_updated_params += local_params(op, shard) * op.updated_fraction;
      if (!op.expert && op.params > 0) tensors.push_back(local_params(op, shard));
    }
    fwd_before[n] = static_cast<int>(fwd_ops.size());
    rerun_before[n] = static_cast<int>(rerun.size());
    // Gradients flow from the layer's last op back to its first.
    for (size_t o = n; o-- > 0;) {
      for (const OpSignature& k : op_kernels(layer.ops[o], true, shard, dtype, device)) {
        grad_ops.push_back(price_op(k, device, costs));
        grad_ops.back().operands = bind_operands(w, i, static_cast<int>(o), k);
      }
      grad_after[o] = static_cast<int>(grad_ops.size());
    }
    out.layer_fwd_comms.push_back(
        pass_comms(layer, shard, false, rerun_op, fwd_before, rerun_before, grad_after));
    out.layer_bwd_comms.push_back(
        pass_comms(layer, shard, true, rerun_op, fwd_before, rerun_before, grad_after));
    PricedOps bwd_ops = std::move(rerun);
    bwd_ops.insert(bwd_ops.end(), grad_ops.begin(), grad_ops.end());
    const Duration fwd = total_time(fwd_ops);
    const Duration bwd = total_time(bwd_ops);
    out.layer_fwd_ops.push_back(std::move(fwd_ops));
    out.layer_bwd_ops.push_back(std::move(bwd_ops));
    const double input_bytes = i > 0 ? w.layers[i - 1].output_bytes : 0;
    const double kept =
        keeps_input ? layer_activation_bytes(layer, input_bytes, layer_policy, act_split) : 0.0;
    out.activation_bytes += kept;
    // Offload takes the chunk's blocks in order, as Megatron-Core's offload context wraps
    // the first layers of a block stack; the last ones, whose backward runs first, stay.
    if (recomputed_by_full(layer.kind) && offloaded_blocks < recompute.offload_layers) {
      ++offloaded_blocks;
      out.offloaded_bytes += kept;
      out.offload_end = i - begin + 1;
    }
    if (recompute.mode != Recompute::kNone) {
      const double whole = layer_activation_bytes(layer, input_bytes, Recompute::kNone, act_split);
      // A uniform group's blocks are all rebuilt before the group's backward runs.
      double rebuilt = whole - kept;
      if (checkpointed && recompute.method == RecomputeMethod::kUniform) {
        group_rebuilt += rebuilt;
        rebuilt = group_rebuilt;
      }
      out.recompute_transient_bytes = std::max(out.recompute_transient_bytes, rebuilt);
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
    // The chunk granularity's calls: each layer's collectives summed by kind.
    for (const PassComm& c : out.layer_fwd_comms.back()) {
      switch (c.kind) {
        case PassComm::Kind::kTp:
          out.tp_bytes_fwd += c.bytes;
          ++out.tp_calls_fwd;
          break;
        case PassComm::Kind::kEp:
          out.all_to_all_bytes += c.bytes;
          break;
        case PassComm::Kind::kCp:
          out.kv_bytes += c.bytes;
          break;
        case PassComm::Kind::kEtpGather:
          out.etp_gather_bytes_fwd += c.bytes;
          break;
        case PassComm::Kind::kEtpScatter:
          out.etp_scatter_bytes_fwd += c.bytes;
          break;
      }
    }
    for (const PassComm& c : out.layer_bwd_comms.back()) {
      switch (c.kind) {
        case PassComm::Kind::kTp:
          out.tp_bytes_bwd += c.bytes;
          ++out.tp_calls_bwd;
          break;
        case PassComm::Kind::kEp:
          out.all_to_all_bytes_bwd += c.bytes;
          break;
        case PassComm::Kind::kCp:
          if (c.recomputed) out.kv_bytes_rerun += c.bytes;
          break;
        case PassComm::Kind::kEtpGather:
          out.etp_gather_bytes_bwd += c.bytes;
          break;
        case PassComm::Kind::kEtpScatter:
          out.etp_scatter_bytes_bwd += c.bytes;
          break;
      }
    }
  }
  out.output_bytes = end > begin ? w.layers[end - 1].output_bytes : 0;
  return out;
}

}  // namespace dtsim::models
