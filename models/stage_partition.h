// Which layers each virtual pipeline stage holds: even, explicit per-stage counts, or
// balanced by each stage's pace (for pipelines over mixed device types).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "models/workload.h"

namespace dtsim::models {

struct LayerRange {
  int begin = 0;
  int end = 0;  // exclusive
};

// How long a virtual stage takes, for balancing: per transformer block (for other models,
// per pass over the whole model), and for the layers it holds besides its blocks (the
// embedding on the first, the head on the last). Seconds, or any common unit.
struct StagePace {
  double block_seconds = 1;
  double fixed_seconds = 0;
};

// What a split of blocks over the virtual stages costs (a pipeline's makespan); lower is
// better.
using SplitCost = std::function<double(const std::vector<int64_t>& blocks)>;

// `counts` gives the transformer blocks (or, for other models, layers) per virtual stage;
// empty: derived from `pace` (empty: even). Transformers keep the embedding on the first
// virtual stage and the head on the last, and take blocks by pipeline_split, judged by
// `cost` (empty: the slowest stage plus the sum of all, a pipeline of one micro-batch);
// other models are cut by FLOPs in proportion to each stage's speed. Throws
// std::invalid_argument naming the problem.
// The transformer blocks of each of `chunks`: a split as partition_layers' `counts` take it.
std::vector<int64_t> transformer_blocks(const Workload& w, const std::vector<LayerRange>& chunks);

std::vector<LayerRange> partition_layers(const Workload& w, int virtual_stages,
                                         const std::vector<int>& counts,
                                         const std::vector<StagePace>& pace,
                                         const SplitCost& cost = {});

// `total` units over pipeline stages whose time per micro-batch with n units is
// fixed[k] + per_unit[k] * n, at least one unit each. The candidates: for each time the
// slowest stage may take, the stages filled with the cheapest units first up to it; the
// one `cost` judges least wins. They hold an optimum of any cost that grows with the
// slowest stage and with the sum of all stages, such as (m - 1) x the slowest plus the sum
// for a pipeline of m micro-batches. For other costs (a replayed schedule), single units
// then move between stages while that lowers the cost (a local search, within a budget of
// max(256, 4 n^2) evaluations). Throws std::invalid_argument as min_max_split does.
std::vector<int64_t> pipeline_split(int64_t total, const std::vector<double>& fixed,
                                    const std::vector<double>& per_unit, const SplitCost& cost);

// `total` split into parts proportional to `weights`, each at least `min_each`, summing to
// `total` (largest remainder).
std::vector<int64_t> proportional_split(int64_t total, const std::vector<double>& weights,
                                        int64_t min_each);

// `total` units split over parts whose time for m units is fixed[i] + per_unit[i] * m, so
// that the slowest part finishes first; each part takes at least one unit (and `total` is
// at least the number of parts). Ties go to the lower index. Throws std::invalid_argument
// when the sizes differ, a time is negative or `total` is too small.
std::vector<int64_t> min_max_split(int64_t total, const std::vector<double>& fixed,
                                   const std::vector<double>& per_unit);

}  // namespace dtsim::models
