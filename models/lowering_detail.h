// Internal to the lowering: the plan with every derived figure resolved and checked.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/chunk_cost.h"
#include "models/lowering.h"
#include "models/placement.h"
#include "models/stage_partition.h"

namespace dtsim::models::lowering_detail {

struct ResolvedPlan {
  int ranks = 0;
  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, v = 1;
  int etp = 1;  // expert tensor parallelism, resolved (tp unless the plan folds it)
  int micro_batches = 1;                     // per replica
  std::vector<int64_t> replica_micro_batch;  // dp entries
  std::vector<double> tp_shares;             // tp entries
  std::optional<Placement> placement;
  std::map<int64_t, Workload> workloads;     // by micro-batch size
  // Layer ranges by virtual stage index chunk * pp + stage (Megatron's interleaving).
  std::vector<LayerRange> chunks;
  std::vector<std::string> notes;
};

// Checks the plan against the model and cluster and derives dp, micro-batches, shares and
// the layer partition. Throws PlanError listing every problem found.
ResolvedPlan resolve_plan(const LoweringInput& in);

// What the rank at `c` holds of every op: its tensor-parallel share, the sequence, context
// and expert splits, and its experts' routing load.
RankShard rank_shard(const LoweringInput& in, const ResolvedPlan& plan, const RankCoords& c);

}  // namespace dtsim::models::lowering_detail
