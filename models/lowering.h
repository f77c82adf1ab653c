// Lowering: (model, training set-up, parallel plan, cluster, cost model) -> the TaskGraph
// of one training iteration, with what the reports need to turn its run into throughput,
// MFU and per-rank breakdowns.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/cost_model.h"
#include "models/model_spec.h"
#include "models/parallel_plan.h"
#include "models/training.h"
#include "sim/input_error.h"
#include "sim/run_control.h"
#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim::models {

// A plan that cannot run on this model and cluster: one problem each, at the scenario key
// at fault (/parallelism/bucket: "must be more than 0 bytes"), or at its section
// (/parallelism: "tp 8 x pp 16 x cp 1 = 128 does not divide ...") when no one key is.
// The lowering does not know the file: the loader's caller adds it.
class PlanError : public InputError {
 public:
  explicit PlanError(std::vector<InputProblem> problems);
};

// How finely compute tasks cut a pass. kChunk: one task per pipeline chunk's forward or
// backward pass, with the chunk's tensor-, context- and expert-parallel collectives summed
// into one call each after it. kLayer: a task between each two of those collectives, each
// call as the real step makes it (what a real executor runs).
enum class Granularity : uint8_t { kChunk, kLayer };
inline constexpr Granularity kAllGranularities[] = {Granularity::kChunk, Granularity::kLayer};
std::string_view granularity_name(Granularity g);

struct LoweringInput {
  const Cluster* cluster = nullptr;
  ModelSpec model;
  TrainingSetup training;
  ParallelPlan plan;
  const CostModel* costs = nullptr;
  Granularity granularity = Granularity::kChunk;
  // With plan.sync_every > 1: whether this iteration is the one that averages parameters
  // across regions (the others reduce gradients inside each region only).
  bool global_sync = true;
  // Progress (ranks emitted of all) and a stop, checked before each rank.
  const RunControl* control = nullptr;
};

// Where a rank sits in the plan and what it holds.
struct RankRole {
  int dp = 0;
  int pp = 0;
  int tp = 0;
  int cp = 0;
  int64_t micro_batch = 0;   // samples per micro-batch of its replica
  int first_layer = 0;       // of its first chunk, in Workload::layers
  int layers = 0;            // layers it holds over all chunks
  int64_t params = 0;        // parameters it holds before ZeRO sharding
  double model_state_bytes = 0;   // weights, gradients, optimizer states after sharding
  double activation_bytes_peak = 0;  // by the schedule's in-flight chunks, plus what
                                     // recomputation rebuilds during a backward pass
  double workspace_bytes = 0;        // the GEMM library's workspace (DeviceEfficiency)
  // Communication buffers held for the whole run: gradient buckets or ZeRO-3's gathered
  // layers, and NCCL's communicator buffers (models/nccl_buffers.h).
  double comm_buffer_bytes = 0;
};

struct LoweredStep {
  TaskGraph graph;
  ParallelPlan plan;  // with dp, replica micro-batches and TP shares resolved
  int micro_batches = 0;        // per replica per iteration
  int64_t samples_per_iteration = 0;
  int64_t tokens_per_iteration = 0;
  double model_flops_per_iteration = 0;
  int64_t model_params = 0;
  std::vector<RankRole> roles;  // by cluster rank
  std::vector<std::string> notes;  // choices the lowering made that a user should know
  CostTally costs;                 // the compute tasks' kernels by where their times came from
  bool cancelled = false;          // stopped through LoweringInput::control: the graph is partial
};

// Throws PlanError.
LoweredStep lower_training_step(const LoweringInput& input);

// What lower_training_step will hold, without building its graph: one rank of each tensor
// rank of each pipeline stage is lowered (the other ranks of a stage emit the same tasks,
// and share its op lists) and its counts are scaled to the stage's ranks. Each collective
// call counts the share of its members that the sample holds. `working_bytes`: what the
// lowering holds besides the graph until it ends (its caches of priced chunks and kernels,
// its book of collective calls). Throws PlanError as the lowering does.
struct StepEstimate {
  TaskGraphCounts graph;
  double working_bytes = 0;
};
StepEstimate estimate_step(const LoweringInput& input);

}  // namespace dtsim::models
