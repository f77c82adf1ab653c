// in_step_entries, with_in_step and compare_ops: op durations gathered per signature.
#include "runner/in_step_costs.h"

#include <algorithm>
#include <cmath>
#include <map>
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

using CallSamples = std::map<std::pair<CollectiveOp, int64_t>, std::vector<double>>;

std::vector<calibration::CollectiveMeasurement> measurements_of(CallSamples samples) {
  std::vector<calibration::CollectiveMeasurement> out;
  for (auto& [key, seconds] : samples) {  // by op, then by ascending size
    if (out.empty() || out.back().op != key.first) out.push_back({key.first, {}});
    calibration::CollectivePoint p;
    p.bytes = Bytes(key.second);
    p.stats = calibration::stats_of(seconds);
    p.samples_s = std::move(seconds);
    out.back().points.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::vector<calibration::CollectiveMeasurement> in_step_collectives(
    const TaskGraph& graph, const Cluster& cluster, const executor::MeasuredRun& run,
    int first_step, int end_step, int ranks) {
  struct Member {
    const executor::MeasuredRank* rank;
    size_t task;  // index in rank->tasks
  };
  std::map<uint32_t, std::vector<Member>> members_of;  // by call: samples in a fixed order
  for (const executor::MeasuredRank& r : run.ranks) {
    for (size_t i = 0; i < r.tasks.size(); ++i) {
      const TaskView t = graph.task(r.tasks[i]);
      if (t.kind == TaskKind::kCollective) members_of[t.collective].push_back({&r, i});
    }
  }
  CallSamples samples;
  for (const auto& [id, measured] : members_of) {
    const CollectiveCall& call = graph.collectives()[id];
    if (static_cast<int>(call.members.size()) != ranks || measured.size() != call.members.size()) {
      continue;
    }
    const ClusterDevice& first = cluster.devices.at(static_cast<size_t>(call.members.front()));
    const bool one_node = std::all_of(call.members.begin(), call.members.end(), [&](int m) {
      const ClusterDevice& d = cluster.devices.at(static_cast<size_t>(m));
      return d.node == first.node && d.region == first.region;
    });
    if (!one_node) continue;
    std::vector<double>& seconds = samples[{call.op, call.bytes_per_call().count()}];
    for (int step = first_step; step < end_step; ++step) {
      int64_t arrived = 0;
      int64_t ended = 0;
      for (const Member& m : measured) {
        const executor::TaskSpan& span =
            m.rank->steps.at(static_cast<size_t>(step)).tasks.at(m.task);
        arrived = std::max(arrived, span.start_ns);
        ended = std::max(ended, span.end_ns);
      }
      seconds.push_back(static_cast<double>(ended - arrived) * 1e-9 / call.call_count());
    }
  }
  std::erase_if(samples, [](const auto& entry) { return entry.second.empty(); });
  return measurements_of(std::move(samples));
}

int intra_node_ranks(const calibration::CostDatabase& db) {
  for (const calibration::LinkCalibration& l : db.links) {
    if (l.link_class == "intra_node") return l.ranks;
  }
  return 0;
}

std::vector<calibration::CollectiveMeasurement> merge_in_step_collectives(
    std::vector<calibration::CollectiveMeasurement> all) {
  CallSamples samples;
  for (calibration::CollectiveMeasurement& m : all) {
    for (calibration::CollectivePoint& p : m.points) {
      std::vector<double>& into = samples[{m.op, p.bytes.count()}];
      into.insert(into.end(), p.samples_s.begin(), p.samples_s.end());
    }
  }
  return measurements_of(std::move(samples));
}

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

calibration::CostDatabase with_in_step(
    calibration::CostDatabase base, const std::vector<calibration::CostEntry>& entries,
    const std::vector<calibration::CollectiveMeasurement>& collectives) {
  for (const calibration::CostEntry& e : entries) {
    const std::string key = calibration::cost_key(e.op);
    std::erase_if(base.entries, [&](const calibration::CostEntry& old) {
      return old.context == calibration::MeasurementContext::kInStep &&
             calibration::cost_key(old.op) == key;
    });
    base.entries.push_back(e);
  }
  bool joined = false;
  for (calibration::LinkCalibration& link : base.links) {
    if (link.link_class != "intra_node") continue;
    for (const calibration::CollectiveMeasurement& m : collectives) {
      auto into =
          std::find_if(link.in_step.begin(), link.in_step.end(),
                       [&](const calibration::CollectiveMeasurement& c) { return c.op == m.op; });
      if (into == link.in_step.end()) into = link.in_step.insert(link.in_step.end(), {m.op, {}});
      for (const calibration::CollectivePoint& p : m.points) {
        std::erase_if(into->points, [&](const calibration::CollectivePoint& old) {
          return old.bytes == p.bytes;
        });
        into->points.insert(std::upper_bound(into->points.begin(), into->points.end(), p,
                                             [](const calibration::CollectivePoint& a,
                                                const calibration::CollectivePoint& b) {
                                               return a.bytes < b.bytes;
                                             }),
                            p);
        joined = true;
      }
    }
    break;
  }
  // In-step times were taken at the run's speed, the isolated ones at the calibration's:
  // the database no longer has one speed to name.
  if (!entries.empty() || joined) base.device.reference_s = 0;
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
