// Which layers each virtual pipeline stage holds: even, explicit per-stage counts, or in
// proportion to each stage's speed (for pipelines over mixed device types).
#pragma once

#include <utility>
#include <vector>

#include "models/workload.h"

namespace dtsim::models {

struct LayerRange {
  int begin = 0;
  int end = 0;  // exclusive
};

// `speed[k]` is the relative speed of virtual stage k (empty: all equal); `counts` the
// transformer blocks (or, for other models, layers) per virtual stage (empty: derived from
// speeds). Transformers keep the embedding on the first virtual stage and the head on the
// last; other models are split by FLOPs. Throws std::invalid_argument naming the problem.
std::vector<LayerRange> partition_layers(const Workload& w, int virtual_stages,
                                         const std::vector<int>& counts,
                                         const std::vector<double>& speed);

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
