// The plan grid: every (tensor-parallel, pipeline-parallel) pair a model admits on a number
// of ranks, for "which plan is fastest and which fit in memory?" (`dtsim plans`, the GUI's
// plan grid). Arithmetic only: lowering still checks each plan in full.
#pragma once

#include <vector>

#include "models/model_spec.h"
#include "models/parallel_plan.h"

namespace dtsim::models {

struct PlanPoint {
  int tp = 1;
  int pp = 1;
  int dp = 1;
};

// The pairs with tp * pp * cp dividing `ranks` (cp from `base`), tp dividing `max_tp` (the
// devices of one node: tensor parallelism stays on NVLink, as Megatron-LM places it),
// tp dividing the model's attention and key-value heads (transformers; other families take
// tp = 1 only, a classifier any tp), pp at most the model's layers, and dp a multiple of
// `base.ep`. Ordered by tp, then pp.
std::vector<PlanPoint> plan_grid(const ModelSpec& model, const ParallelPlan& base, int ranks,
                                 int max_tp);

}  // namespace dtsim::models
