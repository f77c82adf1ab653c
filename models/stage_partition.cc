// Layer partitioning over pipeline stages.
#include "models/stage_partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <string>

namespace dtsim::models {

std::vector<int64_t> proportional_split(int64_t total, const std::vector<double>& weights,
                                        int64_t min_each) {
  const int64_t n = static_cast<int64_t>(weights.size());
  if (n == 0 || total < min_each * n) {
    throw std::invalid_argument("cannot split " + std::to_string(total) + " into " +
                                std::to_string(n) + " parts of at least " +
                                std::to_string(min_each));
  }
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  for (double w : weights) {
    if (!(w >= 0) || !std::isfinite(w)) {
      throw std::invalid_argument("weights must be finite and not negative");
    }
  }
  if (!(sum > 0)) throw std::invalid_argument("weights must not all be zero");
  const int64_t spare = total - min_each * n;
  std::vector<int64_t> out(n, min_each);
  std::vector<std::pair<double, int64_t>> remainders;
  int64_t given = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double exact = static_cast<double>(spare) * weights[i] / sum;
    const auto whole = static_cast<int64_t>(std::floor(exact));
    out[i] += whole;
    given += whole;
    remainders.push_back({exact - static_cast<double>(whole), i});
  }
  // Ties go to the earlier part, so the split is deterministic.
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t k = 0; k < spare - given; ++k) ++out[remainders[k].second];
  return out;
}

namespace {

std::vector<LayerRange> partition_transformer(const Workload& w, int stages,
                                              std::vector<int64_t> counts) {
  int first = 0;
  while (first < static_cast<int>(w.layers.size()) &&
         w.layers[first].kind != LayerKind::kTransformer) {
    ++first;
  }
  std::vector<LayerRange> out(stages);
  int at = first;
  for (int k = 0; k < stages; ++k) {
    out[k].begin = k == 0 ? 0 : at;
    at += static_cast<int>(counts[k]);
    out[k].end = k == stages - 1 ? static_cast<int>(w.layers.size()) : at;
  }
  return out;
}

// Cuts the layer sequence where the running FLOPs cross each stage's share of the total.
std::vector<LayerRange> partition_by_flops(const Workload& w, int stages,
                                           const std::vector<double>& speed) {
  const int n = static_cast<int>(w.layers.size());
  std::vector<double> cost(n);
  for (int i = 0; i < n; ++i) cost[i] = w.layers[i].fwd_flops() + w.layers[i].bwd_flops();
  const double total = std::accumulate(cost.begin(), cost.end(), 0.0);
  const double speed_sum = std::accumulate(speed.begin(), speed.end(), 0.0);
  std::vector<LayerRange> out(stages);
  int at = 0;
  double target = 0;
  double done = 0;
  for (int k = 0; k < stages; ++k) {
    out[k].begin = at;
    target += total * speed[k] / speed_sum;
    const int must_leave = stages - k - 1;  // one layer for each later stage
    int end = at + 1;
    done += cost[at];
    while (end < n - must_leave && done + cost[end] / 2 <= target) done += cost[end++];
    if (k == stages - 1) end = n;
    out[k].end = end;
    at = end;
  }
  return out;
}

}  // namespace

std::vector<LayerRange> partition_layers(const Workload& w, int virtual_stages,
                                         const std::vector<int>& counts,
                                         const std::vector<double>& speed_in) {
  std::vector<double> speed = speed_in;
  if (speed.empty()) speed.assign(virtual_stages, 1.0);
  if (static_cast<int>(speed.size()) != virtual_stages) {
    throw std::invalid_argument(std::to_string(speed.size()) + " stage speeds for " +
                                std::to_string(virtual_stages) + " virtual stages");
  }
  const bool transformer = is_transformer(w.spec.family);
  int blocks = 0;
  for (const Layer& l : w.layers) blocks += l.kind == LayerKind::kTransformer ? 1 : 0;
  const int units = transformer ? blocks : static_cast<int>(w.layers.size());
  const std::string what = transformer ? "transformer layers" : "layers";
  if (units < virtual_stages) {
    throw std::invalid_argument(std::to_string(virtual_stages) + " pipeline chunks need at least as many " +
                                what + ", the model has " + std::to_string(units));
  }
  if (!counts.empty()) {
    if (static_cast<int>(counts.size()) != virtual_stages) {
      throw std::invalid_argument("stage_layers has " + std::to_string(counts.size()) +
                                  " entries, expected one per virtual pipeline stage (" +
                                  std::to_string(virtual_stages) + ")");
    }
    int64_t sum = 0;
    for (int c : counts) {
      if (c < 1) throw std::invalid_argument("stage_layers entries must be at least 1");
      sum += c;
    }
    if (sum != units) {
      throw std::invalid_argument("stage_layers sums to " + std::to_string(sum) + ", the model has " +
                                  std::to_string(units) + " " + what);
    }
  }
  if (transformer) {
    std::vector<int64_t> c(counts.begin(), counts.end());
    if (c.empty()) c = proportional_split(units, speed, 1);
    return partition_transformer(w, virtual_stages, std::move(c));
  }
  if (!counts.empty()) {
    std::vector<LayerRange> out(virtual_stages);
    int at = 0;
    for (int k = 0; k < virtual_stages; ++k) {
      out[k] = {at, at + counts[k]};
      at += counts[k];
    }
    return out;
  }
  return partition_by_flops(w, virtual_stages, speed);
}

// Greedy: each unit goes to the part that would finish it first. With times that grow
// with m, this minimizes the largest time (the exchange argument of minimax allocation).
std::vector<int64_t> min_max_split(int64_t total, const std::vector<double>& fixed,
                                   const std::vector<double>& per_unit) {
  const size_t n = fixed.size();
  if (per_unit.size() != n || n == 0) {
    throw std::invalid_argument("min_max_split: " + std::to_string(n) + " fixed times and " +
                                std::to_string(per_unit.size()) + " per-unit times");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!(fixed[i] >= 0) || !(per_unit[i] >= 0)) {
      throw std::invalid_argument("min_max_split: times must be non-negative");
    }
  }
  if (total < static_cast<int64_t>(n)) {
    throw std::invalid_argument("min_max_split: " + std::to_string(total) + " units for " +
                                std::to_string(n) + " parts");
  }
  std::vector<int64_t> m(n, 1);
  using Next = std::pair<double, size_t>;  // (time with one more unit, part)
  std::priority_queue<Next, std::vector<Next>, std::greater<>> queue;
  for (size_t i = 0; i < n; ++i) queue.push({fixed[i] + per_unit[i] * 2, i});
  for (int64_t left = total - static_cast<int64_t>(n); left > 0; --left) {
    const size_t i = queue.top().second;
    queue.pop();
    ++m[i];
    queue.push({fixed[i] + per_unit[i] * static_cast<double>(m[i] + 1), i});
  }
  return m;
}

}  // namespace dtsim::models
