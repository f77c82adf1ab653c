// Batch-size schedules: Megatron-LM's ramp-up, phase iterations and the steps simulated.
#include "models/batch_schedule.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

namespace dtsim::models {

std::vector<BatchPhase> megatron_rampup(int64_t start, int64_t increment, int64_t ramp_samples,
                                        int64_t global_batch, std::string& problem) {
  const auto n = [](int64_t v) { return std::to_string(v); };
  if (start < 1 || increment < 1 || ramp_samples < 1) {
    problem = "start, increment and samples must be positive";
    return {};
  }
  if (start >= global_batch) {
    problem = "start (" + n(start) + ") must be below global_batch (" + n(global_batch) + ")";
    return {};
  }
  if ((global_batch - start) % increment != 0) {
    problem = "global_batch - start (" + n(global_batch - start) +
              ") must be a multiple of increment (" + n(increment) + "), as Megatron-LM asserts";
    return {};
  }
  const int64_t steps = (global_batch - start) / increment;
  if (steps > kMostRampSteps) {
    problem = "(global_batch - start) / increment = " + n(steps) + " steps; at most " +
              n(kMostRampSteps) + " (a coarser increment)";
    return {};
  }
  // Megatron-LM: rampup_samples_per_increment = ramp_samples / num_increments (a float),
  // and the batch is start + floor(consumed / that) * increment.
  const double per_step = static_cast<double>(ramp_samples) / static_cast<double>(steps);
  std::vector<BatchPhase> phases;
  int64_t before = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const auto boundary = static_cast<int64_t>(std::ceil(per_step * static_cast<double>(i + 1)));
    phases.push_back({start + i * increment, boundary - before});
    before = boundary;
  }
  return phases;
}

std::vector<PhaseIterations> phase_iterations(const std::vector<BatchPhase>& phases,
                                              double total_samples) {
  std::vector<PhaseIterations> out;
  int64_t consumed = 0;
  double boundary = 0;
  for (const BatchPhase& p : phases) {
    boundary = std::min(boundary + static_cast<double>(p.samples), total_samples);
    PhaseIterations it{p.global_batch, 0, 0};
    if (static_cast<double>(consumed) < boundary) {
      it.iterations = static_cast<int64_t>(std::ceil((boundary - static_cast<double>(consumed)) /
                                                     static_cast<double>(p.global_batch)));
      it.samples = it.iterations * p.global_batch;
      consumed += it.samples;
    }
    out.push_back(it);
  }
  return out;
}

std::vector<int64_t> simulated_batches(const std::vector<BatchPhase>& phases, int most) {
  std::set<int64_t> distinct;
  for (const BatchPhase& p : phases) distinct.insert(p.global_batch);
  const std::vector<int64_t> all(distinct.begin(), distinct.end());
  if (static_cast<int>(all.size()) <= most || most < 2) return all;
  std::set<int64_t> picked;
  for (int i = 0; i < most; ++i) {
    const size_t at = static_cast<size_t>(
        std::llround(static_cast<double>(i) * static_cast<double>(all.size() - 1) /
                     static_cast<double>(most - 1)));
    picked.insert(all[at]);
  }
  return {picked.begin(), picked.end()};
}

double interpolated_step(const std::map<int64_t, double>& simulated, int64_t global_batch) {
  if (simulated.empty()) return 0;
  const auto above = simulated.lower_bound(global_batch);
  if (above != simulated.end() && above->first == global_batch) return above->second;
  if (above == simulated.begin()) return above->second;
  if (above == simulated.end()) return std::prev(above)->second;
  const auto below = std::prev(above);
  const double f = static_cast<double>(global_batch - below->first) /
                   static_cast<double>(above->first - below->first);
  return below->second + f * (above->second - below->second);
}

}  // namespace dtsim::models
