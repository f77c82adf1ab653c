// A parallelization plan: how a training step is split over the cluster's ranks (data,
// tensor, pipeline, context and expert parallelism, ZeRO/FSDP), placed on the topology,
// and balanced over mixed devices.
#pragma once

#include <string>
#include <vector>

#include "models/schedule.h"
#include "sim/collectives/collective_plan.h"
#include "sim/units.h"

namespace dtsim::models {

enum class ParallelAxis { kTp, kCp, kDp, kPp };
std::string_view parallel_axis_name(ParallelAxis a);

struct ParallelPlan {
  int dp = 0;  // 0: derived, ranks / (tp * pp * cp)
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int ep = 1;  // expert parallelism (Placement::expert_groups)
  // Expert tensor parallelism: the ranks that split each expert's weights. 0 = tp, as
  // Megatron-Core's --expert-tensor-parallel-size defaults; another value folds the expert
  // layers' ranks apart from the attention's (MoE parallel folding: etp x ep divides
  // tp x cp x dp).
  int etp = 0;
  int expert_tp() const { return etp > 0 ? etp : tp; }
  int virtual_stages = 1;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  int zero_stage = 0;  // 0..3; 3 is FSDP full-shard
  bool sequence_parallel = false;

  // Data-parallel gradient reduction: buckets of this many gradient bytes, each reduced as
  // soon as the backward pass has produced it (PyTorch DDP's default is 25 MiB).
  Bytes bucket = MiB(25);
  bool overlap_grad_reduce = true;
  // ZeRO-3 only. true: each layer's parameter all-gather runs on the data-parallel stream up
  // to two layers ahead of the layer that needs it (prefetch), and its gradient
  // reduce-scatter after it, both alongside compute. false: every gather and reduce-scatter
  // is issued on the compute stream in order, so compute and ZeRO-3 communication take
  // turns, as in DeepSpeed's ZeRO-3 before 0.5, whose _allgather_param calls
  // torch.cuda.synchronize() before every gather.
  bool overlap_param_gather = true;
  // ZeRO-3 only: how the framework gathers and reduces. The defaults are FSDP's (one flat
  // unit per layer, gradients reduce-scattered). DeepSpeed's stage 3 of 2021 (0.3.x,
  // partition_parameters.py and stage3.py) gathers each parameter tensor with a call of
  // its own (per_parameter_gather), keeps tensors under stage3_param_persistence_threshold
  // (1e5 elements: biases, LayerNorm) whole on every rank instead of partitioning them
  // (persistence_threshold), gathers into a list of per-rank tensors, which PyTorch's NCCL
  // backend fills with one device copy per rank after the call (gather_copies_per_rank),
  // and with contiguous_gradients off all-reduces the gradients instead of
  // reduce-scattering them (grad_all_reduce).
  bool per_parameter_gather = false;
  int64_t persistence_threshold = 0;
  bool gather_copies_per_rank = false;
  bool grad_all_reduce = false;
  CollectiveAlgorithm dp_algorithm = CollectiveAlgorithm::kAuto;
  // Tensor-parallel collectives inside a node are priced by the alpha-beta estimate
  // (CollectiveCall::analytical) unless this is false.
  bool tp_comm_analytical = true;
  // Tensor-parallel collectives run alongside the GEMMs they feed (Transformer Engine's
  // userbuffer overlap, Megatron-LM --tp-comm-overlap) instead of after them on the compute
  // stream: a chunk's output is ready when both its kernels and its collectives are done.
  // Needs sequence parallelism, as the real implementations do.
  bool tp_comm_overlap = false;

  // Heterogeneous clusters. Transformer blocks per virtual pipeline stage (pp * virtual_stages
  // entries); empty = even, unless balance_stages splits them by each stage's speed.
  std::vector<int> stage_layers;
  bool balance_stages = false;
  // Samples per micro-batch of each data-parallel replica (dp entries); empty = the
  // training set-up's micro_batch everywhere, unless balance_replicas sets them by speed.
  std::vector<int64_t> replica_micro_batch;
  bool balance_replicas = false;
  // Each tensor-parallel rank's share of every split op (tp entries summing to 1).
  std::vector<double> tp_shares;

  // Placement: axes from innermost (consecutive ranks) to outermost. Megatron-LM's order,
  // tensor parallel inside a node first, is the default.
  std::vector<ParallelAxis> axis_order = {ParallelAxis::kTp, ParallelAxis::kCp, ParallelAxis::kDp,
                                          ParallelAxis::kPp};
  // Explicit mapping: rank_map[position] = cluster rank, where position is the index the
  // axis order gives. Empty = identity.
  std::vector<int> rank_map;

  // Geo-distributed data parallelism: gradients are reduced inside each region every step
  // and parameters averaged across regions every `sync_every` steps (local SGD). 1 =
  // synchronous data parallelism across regions every step.
  int sync_every = 1;

  // The hybrid of Song et al. (KDD 2020): a data-parallel backbone and the classifier layer
  // sharded over every rank (model parallel), with a distributed softmax.
  bool shard_classifier = false;
};

}  // namespace dtsim::models
