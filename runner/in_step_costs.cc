// in_step_entries, with_in_step and compare_ops: op durations gathered per signature.
#include "runner/in_step_costs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "calibration/cost_key.h"
#include "calibration/sample_stats.h"

namespace dtsim {

namespace {

struct Samples {
  OpSignature op;
  std::vector<double> seconds;
  int instances = 0;
  int rank = 0;  // the first rank that ran it (its device prices it)
};

// Every instance of every op in steps [first, end), grouped by the database's key.
std::vector<Samples> gather(const TaskGraph& graph, const executor::MeasuredRun& run, int first,
                            int end) {
  std::vector<Samples> out;
  std::unordered_map<std::string, size_t> index;
  for (const executor::MeasuredRank& r : run.ranks) {
    for (size_t i = 0; i < r.tasks.size(); ++i) {
      const TaskView t = graph.task(r.tasks[i]);
      if (t.kind != TaskKind::kCompute || t.ops == kNoOps) continue;
      const auto ops = graph.op_list(t.ops);
      for (size_t k = 0; k < ops.size(); ++k) {
        const std::string key = calibration::cost_key(ops[k]);
        auto [it, added] = index.try_emplace(key, out.size());
        if (added) out.push_back({ops[k], {}, 0, r.rank});
        Samples& s = out[it->second];
        ++s.instances;
        for (int step = first; step < end; ++step) {
          const auto& durations = r.steps.at(static_cast<size_t>(step)).op_ns.at(i);
          if (durations.size() != ops.size()) {
            throw std::invalid_argument("rank " + std::to_string(r.rank) + ", task " +
                                        std::to_string(r.tasks[i]) + ": " +
                                        std::to_string(durations.size()) + " op durations for " +
                                        std::to_string(ops.size()) + " ops");
          }
          s.seconds.push_back(static_cast<double>(durations[k]) * 1e-9);
        }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<calibration::CostEntry> in_step_entries(const TaskGraph& graph,
                                                    const executor::MeasuredRun& run,
                                                    int first_step, int end_step) {
  std::vector<calibration::CostEntry> entries;
  for (Samples& s : gather(graph, run, first_step, end_step)) {
    if (s.seconds.empty()) continue;
    calibration::CostEntry e;
    e.op = s.op;
    e.context = calibration::MeasurementContext::kInStep;
    e.stats = calibration::stats_of(s.seconds);
    e.samples_s = std::move(s.seconds);
    entries.push_back(std::move(e));
  }
  return entries;
}

std::vector<calibration::CostEntry> merge_in_step(std::vector<calibration::CostEntry> entries) {
  std::vector<calibration::CostEntry> out;
  std::unordered_map<std::string, size_t> index;
  for (calibration::CostEntry& e : entries) {
    auto [it, added] = index.try_emplace(calibration::cost_key(e.op), out.size());
    if (added) {
      out.push_back(std::move(e));
      continue;
    }
    calibration::CostEntry& into = out[it->second];
    into.samples_s.insert(into.samples_s.end(), e.samples_s.begin(), e.samples_s.end());
    into.stats = calibration::stats_of(into.samples_s);
  }
  return out;
}

calibration::CostDatabase with_in_step(calibration::CostDatabase base,
                                       const std::vector<calibration::CostEntry>& entries) {
  for (const calibration::CostEntry& e : entries) {
    const std::string key = calibration::cost_key(e.op);
    std::erase_if(base.entries, [&](const calibration::CostEntry& old) {
      return old.context == calibration::MeasurementContext::kInStep &&
             calibration::cost_key(old.op) == key;
    });
    base.entries.push_back(e);
  }
  // In-step times were taken at the run's speed, the isolated ones at the calibration's:
  // the database no longer has one speed to name.
  if (!entries.empty()) base.device.reference_s = 0;
  return base;
}

std::vector<executor::OpComparison> compare_ops(
    const TaskGraph& graph, const executor::MeasuredRun& run,
    const std::function<double(const OpSignature&, int rank)>& price) {
  const int steps = run.ranks.empty() ? 0 : static_cast<int>(run.ranks.front().steps.size());
  std::vector<executor::OpComparison> out;
  for (Samples& s : gather(graph, run, 0, steps)) {
    executor::OpComparison c;
    c.op = s.op;
    c.instances = s.instances;
    c.measured_s = calibration::stats_of(s.seconds).median_s;
    c.predicted_s = price(s.op, s.rank);
    c.total_gap_s = c.instances * (c.predicted_s - c.measured_s);
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(),
            [](const executor::OpComparison& a, const executor::OpComparison& b) {
              return std::abs(a.total_gap_s) > std::abs(b.total_gap_s);
            });
  return out;
}

}  // namespace dtsim
