// Layer partitioning over pipeline stages.
#include "models/stage_partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <set>
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

// A pipeline of one micro-batch: the slowest stage plus the sum of all.
SplitCost one_pass(const std::vector<double>& fixed, const std::vector<double>& per_unit) {
  return [&fixed, &per_unit](const std::vector<int64_t>& m) {
    double slowest = 0, sum = 0;
    for (size_t k = 0; k < m.size(); ++k) {
      const double t = fixed[k] + per_unit[k] * static_cast<double>(m[k]);
      slowest = std::max(slowest, t);
      sum += t;
    }
    return slowest + sum;
  };
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

std::vector<int64_t> transformer_blocks(const Workload& w, const std::vector<LayerRange>& chunks) {
  std::vector<int64_t> blocks;
  blocks.reserve(chunks.size());
  for (const LayerRange& r : chunks) {
    int64_t n = 0;
    for (int i = r.begin; i < r.end; ++i) {
      n += w.layers[static_cast<size_t>(i)].kind == LayerKind::kTransformer;
    }
    blocks.push_back(n);
  }
  return blocks;
}

std::vector<LayerRange> partition_layers(const Workload& w, int virtual_stages,
                                         const std::vector<int>& counts,
                                         const std::vector<StagePace>& pace,
                                         const SplitCost& cost) {
  if (!pace.empty() && static_cast<int>(pace.size()) != virtual_stages) {
    throw std::invalid_argument(std::to_string(pace.size()) + " stage paces for " +
                                std::to_string(virtual_stages) + " virtual stages");
  }
  std::vector<double> speed, fixed, per_block;
  for (const StagePace& s : pace) {
    if (!(s.block_seconds > 0) || !std::isfinite(s.block_seconds) || !(s.fixed_seconds >= 0)) {
      throw std::invalid_argument("stage paces must be positive and finite");
    }
    speed.push_back(1 / s.block_seconds);
    per_block.push_back(s.block_seconds);
    fixed.push_back(s.fixed_seconds);
  }
  if (speed.empty()) speed.assign(virtual_stages, 1.0);
  const bool transformer = is_transformer(w.spec.family);
  int blocks = 0;
  for (const Layer& l : w.layers) blocks += l.kind == LayerKind::kTransformer ? 1 : 0;
  const int units = transformer ? blocks : static_cast<int>(w.layers.size());
  const std::string what = transformer ? "transformer layers" : "layers";
  if (units < virtual_stages && counts.empty()) {
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
    for (size_t k = 0; k < counts.size(); ++k) {
      // Megatron-LM's --account-for-embedding-in-pipeline-split and
      // --account-for-loss-in-pipeline-split: a transformer's first virtual stage may hold
      // the embedding alone, its last the output layer alone.
      const bool end = transformer && virtual_stages > 1 && (k == 0 || k + 1 == counts.size());
      if (counts[k] < (end ? 0 : 1)) {
        throw std::invalid_argument(
            transformer ? "stage_layers entries must be at least 1 (0 only for the first and last "
                          "virtual stage, which then hold the embedding or the output layer alone)"
                        : "stage_layers entries must be at least 1");
      }
      sum += counts[k];
    }
    if (sum != units) {
      throw std::invalid_argument("stage_layers sums to " + std::to_string(sum) + ", the model has " +
                                  std::to_string(units) + " " + what);
    }
  }
  if (transformer) {
    std::vector<int64_t> c(counts.begin(), counts.end());
    if (c.empty()) {
      c = pace.empty()
              ? proportional_split(units, speed, 1)
              : pipeline_split(units, fixed, per_block, cost ? cost : one_pass(fixed, per_block));
    }
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

namespace {

void check_split(int64_t total, const std::vector<double>& fixed,
                 const std::vector<double>& per_unit, const char* who) {
  const size_t n = fixed.size();
  if (per_unit.size() != n || n == 0) {
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(n) + " fixed times and " +
                                std::to_string(per_unit.size()) + " per-unit times");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!(fixed[i] >= 0) || !(per_unit[i] >= 0)) {
      throw std::invalid_argument(std::string(who) + ": times must be non-negative");
    }
  }
  if (total < static_cast<int64_t>(n)) {
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(total) + " units for " +
                                std::to_string(n) + " parts");
  }
}

}  // namespace

// Greedy: each unit goes to the part that would finish it first. With times that grow
// with m, this minimizes the largest time (the exchange argument of minimax allocation).
std::vector<int64_t> min_max_split(int64_t total, const std::vector<double>& fixed,
                                   const std::vector<double>& per_unit) {
  check_split(total, fixed, per_unit, "min_max_split");
  const size_t n = fixed.size();
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

// The best split has some slowest-stage time T, one of the fixed[k] + per_unit[k] * n.
// For each such cap, the least sum fills the stages with the cheapest units first, up to
// what the cap lets each hold; the best over all caps is the optimum.
std::vector<int64_t> pipeline_split(int64_t total, const std::vector<double>& fixed,
                                    const std::vector<double>& per_unit, const SplitCost& cost) {
  check_split(total, fixed, per_unit, "pipeline_split");
  const size_t n = fixed.size();
  const auto time = [&](size_t k, int64_t units) {
    return fixed[k] + per_unit[k] * static_cast<double>(units);
  };
  std::vector<size_t> cheapest(n);
  std::iota(cheapest.begin(), cheapest.end(), size_t{0});
  std::stable_sort(cheapest.begin(), cheapest.end(),
                   [&](size_t a, size_t b) { return per_unit[a] < per_unit[b]; });
  const int64_t most = total - static_cast<int64_t>(n) + 1;  // the most one stage can hold
  std::vector<double> caps;
  for (size_t k = 0; k < n; ++k) {
    for (int64_t u = 1; u <= most; ++u) caps.push_back(time(k, u));
  }
  std::sort(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  std::set<std::vector<int64_t>> tried;
  std::vector<int64_t> best;
  double best_cost = 0;
  for (double cap : caps) {
    std::vector<int64_t> m(n, 1);
    int64_t left = total - static_cast<int64_t>(n);
    bool fits = true;
    for (size_t k : cheapest) {
      if (time(k, 1) > cap) {
        fits = false;
        break;
      }
      // Units stage k can hold within the cap (a relative tolerance keeps the cap's own
      // stage from losing its last unit to rounding).
      int64_t can = most;
      if (per_unit[k] > 0) {
        const double room = (cap * (1 + 1e-12) - fixed[k]) / per_unit[k];
        can = std::min<int64_t>(most, static_cast<int64_t>(std::floor(room)));
      }
      const int64_t more = std::min(left, std::max<int64_t>(0, can - 1));
      m[k] += more;
      left -= more;
    }
    if (!fits || left > 0 || !tried.insert(m).second) continue;
    const double c = cost(m);
    if (best.empty() || c < best_cost) {
      best = std::move(m);
      best_cost = c;
    }
  }
  // A cost that is not a function of the slowest stage and the sum alone (a replayed
  // schedule, where a stage's position and its forward/backward split count) can prefer a
  // split outside the candidates, such as blocks spread over equally fast stages: move one
  // block at a time between two stages while that lowers the cost, within a budget of
  // evaluations.
  int64_t budget = std::max<int64_t>(256, 4 * static_cast<int64_t>(n * n));
  for (bool improved = true; improved && budget > 0;) {
    improved = false;
    for (size_t from = 0; from < n && budget > 0; ++from) {
      for (size_t to = 0; to < n && budget > 0; ++to) {
        if (from == to || best[from] < 2) continue;
        std::vector<int64_t> m = best;
        --m[from];
        ++m[to];
        --budget;
        const double c = cost(m);
        if (c < best_cost * (1 - 1e-12)) {
          best = std::move(m);
          best_cost = c;
          improved = true;
        }
      }
    }
  }
  return best;
}

}  // namespace dtsim::models
