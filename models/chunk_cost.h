// What one rank's share of a run of layers (a pipeline chunk) costs for one micro-batch:
// forward and backward time on its device, activations kept, and the bytes of the
// tensor-, context- and expert-parallel collectives it needs.
#pragma once

#include <cstdint>
#include <vector>

#include "models/cost_model.h"
#include "models/workload.h"
#include "sim/collectives/collective_plan.h"
#include "sim/op_operands.h"

namespace dtsim::models {

// How a rank splits the ops it runs.
struct RankShard {
  int tp = 1;
  double tp_share = 1;  // this rank's fraction of every tensor-split op (1 / tp when even)
  bool sequence_parallel = false;
  int cp = 1;
  int ep = 1;
  // The routed rows the busiest rank of the expert-parallel group gets, over the mean
  // (routing imbalance, see TrainingSetup::expert_load): its experts' kernels and the
  // all-to-all it receives grow by it, and the group waits for it.
  double expert_load = 1;
  int etp = 0;  // expert tensor parallelism (ParallelPlan::etp); 0 = tp

  int expert_tp() const { return etp > 0 ? etp : tp; }
  // This rank's fraction of every expert's split weights: its tensor-parallel share while
  // the experts split as the rest does, 1/etp otherwise (even shares).
  double expert_share() const { return expert_tp() == tp ? tp_share : 1.0 / etp; }
  // The fraction of its sequence shard's tokens a rank dispatches: Megatron-Core's token
  // dispatcher runs on the sequence-parallel shard (MoE with tp > 1 needs sequence
  // parallelism).
  double local_tokens() const { return sequence_parallel ? tp_share : 1.0; }
  // The rows a rank's experts get, over the micro-batch's routed rows (the rank's pass
  // share before the busiest rank's load): the group dispatches its sequence shard, and
  // the expert-tensor-parallel all-gather joins etp such shards. 1 where the experts split
  // as the rest does (the gather rebuilds every rank's tokens).
  double expert_rows() const { return expert_tp() == tp ? 1.0 : local_tokens() * etp; }
};

// The kernels of `op` in one pass as a rank of `shard` runs them on `device`, with `math`
// the plan's math dtype: its share after the plan's splits, a GEMM's backward as its data-
// and weight-gradient GEMMs, and the casts around an FP8 GEMM.
std::vector<OpSignature> op_kernels(const Op& op, bool backward, const RankShard& shard, DType math,
                                    const DeviceSpec& device);

// A kernel priced on the rank's device, with the launch its task adds.
struct PricedOp {
  OpSignature op;
  OpCost cost;
  Duration launch;
  OpOperands operands;  // the tensors it binds (models/operand_binding.h)
  Duration total() const { return cost.time + launch; }
};
using PricedOps = std::vector<PricedOp>;
PricedOp price_op(const OpSignature& op, const DeviceSpec& device, const CostModel& costs);
Duration total_time(const PricedOps& ops);
CostTally tally_of(const PricedOps& ops);
// Parameters of `op` that a rank of `shard` holds.
double local_params(const Op& op, const RankShard& shard);

// A collective inside one layer's pass: after the pass's first `after` kernels of that
// layer (an index into layer_fwd_ops or layer_bwd_ops), `bytes` over its group.
struct PassComm {
  enum class Kind : uint8_t {
    kTp,  // tensor-parallel all-reduce (or sequence-parallel reduce-scatter + all-gather)
    kEp,  // expert-parallel all-to-all
    kCp,  // context-parallel gather of keys and values (backward: their gradients' scatter)
    // Expert tensor parallelism (Megatron-Core's all-to-all dispatcher): the dispatched
    // tokens all-gathered over the expert-tensor-parallel group before the experts, their
    // outputs reduce-scattered back after them (in the backward pass the other way round).
    kEtpGather,
    kEtpScatter,
  };
  Kind kind = Kind::kTp;
  int after = 0;
  double bytes = 0;
  // A forward collective run again by recomputation inside the backward pass.
  bool recomputed = false;
};

// The collectives of one tensor-parallel exchange of a tensor: an all-reduce, or under
// sequence parallelism a reduce-scatter into sequence shards and an all-gather out of them
// (Megatron-LM's reduce_scatter_to_sequence_parallel_region and
// gather_from_sequence_parallel_region, with the shard's norm and dropout between). Both
// move the bytes of the all-reduce, but NCCL runs them as different calls, and NVLink
// SHARP speeds up only the all-reduce.
std::vector<CollectiveOp> tp_exchange_ops(bool sequence_parallel);

struct ChunkCost {
  Duration fwd;
  Duration bwd;  // with the recomputation the set-up asks for
  // Per layer, in layer order: the kernels of its forward pass, and of its backward pass
  // (the recomputed forward first, then the gradients, last op first).
  std::vector<PricedOps> layer_fwd_ops;
  std::vector<PricedOps> layer_bwd_ops;
  // Per layer, the collectives that cut its passes, in the order they run (the layer
  // granularity's task boundaries; the chunk totals below are their sums).
  std::vector<std::vector<PassComm>> layer_fwd_comms;
  std::vector<std::vector<PassComm>> layer_bwd_comms;
  // Per layer of the chunk, in layer order: forward and backward time (their kernels'
  // totals) and local parameters
  // (dense and expert), so that gradient buckets and ZeRO-3 gathers can follow the passes.
  std::vector<Duration> layer_fwd;
  std::vector<Duration> layer_bwd;
  std::vector<double> layer_dense_params;
  std::vector<double> layer_expert_params;
  // Per layer, the local dense parameters of each op that has any (a ZeRO-3 framework that
  // gathers tensor by tensor calls once per op's weights).
  std::vector<std::vector<double>> layer_dense_tensors;
  double dense_params = 0;
  double expert_params = 0;
  // The dense parameters a step computes gradients for and updates (Op::updated_fraction).
  double dense_updated_params = 0;
  double activation_bytes = 0;  // kept per micro-batch until the backward pass
  // The part of activation_bytes that activation offload (RecomputePolicy::offload_layers)
  // moves to host memory between the passes.
  double offloaded_bytes = 0;
  int offload_end = 0;  // those are kept by the chunk's layers [0, offload_end)
  // What recomputation rebuilds at once in the backward pass: the largest of the chunk's
  // layers' activations beyond what the recompute mode keeps (a whole layer's under full
  // recomputation, a uniform group's layers together, its modules' under selective), alive
  // while that layer's (or group's) backward runs. 0 without recomputation.
  double recompute_transient_bytes = 0;
  double output_bytes = 0;      // the chunk's output activation, whole (before any split)
  // The layers' collectives summed, as chunk granularity makes them (one call each):
  double tp_bytes_fwd = 0;      // the forward's TP collectives
  double tp_bytes_bwd = 0;      // with the recomputed forward's under full recomputation
  int tp_calls_fwd = 0;         // how many exchanges those bytes are (one per PassComm)
  int tp_calls_bwd = 0;
  double kv_bytes = 0;          // context-parallel gather of keys and values
  double all_to_all_bytes = 0;  // expert-parallel dispatch + combine, the forward pass
  // The backward pass's: the gradients' and, when recomputation reruns them, the forward's.
  double all_to_all_bytes_bwd = 0;
  double kv_bytes_rerun = 0;  // keys and values gathered again for a recomputed forward
  // Expert tensor parallelism's all-gathers and reduce-scatters, by pass.
  double etp_gather_bytes_fwd = 0, etp_scatter_bytes_fwd = 0;
  double etp_gather_bytes_bwd = 0, etp_scatter_bytes_bwd = 0;
};

// Layers [begin, end) of `w`. `input_bytes` is the activation entering the chunk (kept by
// full recomputation).
ChunkCost chunk_cost(const Workload& w, int begin, int end, const RankShard& shard,
                     RecomputePolicy recompute, const DeviceSpec& device, const CostModel& costs);

}  // namespace dtsim::models
