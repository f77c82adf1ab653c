// compare_step: medians over the measured steps against the simulated step.
#include "executor/step_comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace dtsim::executor {

double relative_error(double predicted, double measured) {
  if (measured > 0) return (predicted - measured) / measured;
  return predicted > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (at - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

namespace {

ErrorFigure figure(const std::vector<double>& measured, double predicted) {
  ErrorFigure f;
  f.measured_s = quantile(measured, 0.5);
  f.measured_p10_s = quantile(measured, 0.1);
  f.measured_p90_s = quantile(measured, 0.9);
  f.predicted_s = predicted;
  f.error = relative_error(predicted, f.measured_s);
  return f;
}

double seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace

StepComparison compare_step(const TaskGraph& graph, const MeasuredRun& run,
                            std::span<const PredictedTask> predicted, double predicted_step_s) {
  if (predicted.size() != graph.num_tasks()) {
    throw std::invalid_argument("the prediction covers " + std::to_string(predicted.size()) +
                                " tasks, the graph has " + std::to_string(graph.num_tasks()));
  }
  StepComparison c;
  c.steps = run.ranks.empty() ? 0 : static_cast<int>(run.ranks.front().steps.size());
  for (const MeasuredRank& r : run.ranks) {
    if (static_cast<int>(r.steps.size()) != c.steps) {
      throw std::invalid_argument("rank " + std::to_string(r.rank) + " measured " +
                                  std::to_string(r.steps.size()) + " steps, rank 0 " +
                                  std::to_string(c.steps));
    }
    for (const MeasuredStep& s : r.steps) {
      if (s.tasks.size() != r.tasks.size()) {
        throw std::invalid_argument("rank " + std::to_string(r.rank) +
                                    ": a step's spans do not match its tasks");
      }
    }
    for (TaskId id : r.tasks) {
      if (id >= graph.num_tasks() || graph.task(id).rank != r.rank) {
        throw std::invalid_argument("rank " + std::to_string(r.rank) + " ran task " +
                                    std::to_string(id) + ", which is not one of its tasks");
      }
    }
  }
  if (c.steps == 0) throw std::invalid_argument("the run measured no step");
  // Every task of the graph measured once, by its rank, and predicted.
  std::vector<int> measured(graph.num_tasks(), 0);
  for (const MeasuredRank& r : run.ranks) {
    for (TaskId id : r.tasks) ++measured[id];
  }
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    if (measured[id] != 1) {
      throw std::invalid_argument("task " + std::to_string(id) + " was measured " +
                                  std::to_string(measured[id]) + " times, not once");
    }
    if (!predicted[id].seen) {
      throw std::invalid_argument("task " + std::to_string(id) + " has no prediction");
    }
  }

  // Each step starts when its first rank starts (the ranks leave a barrier together).
  std::vector<int64_t> step_start(static_cast<size_t>(c.steps), INT64_MAX);
  std::vector<int64_t> step_end(static_cast<size_t>(c.steps), INT64_MIN);
  for (const MeasuredRank& r : run.ranks) {
    for (int s = 0; s < c.steps; ++s) {
      const MeasuredStep& st = r.steps[static_cast<size_t>(s)];
      step_start[static_cast<size_t>(s)] =
          std::min(step_start[static_cast<size_t>(s)], st.start_ns);
      for (const TaskSpan& span : st.tasks) {
        step_end[static_cast<size_t>(s)] = std::max(step_end[static_cast<size_t>(s)], span.end_ns);
      }
    }
  }
  for (int s = 0; s < c.steps; ++s) {
    c.measured_steps_s.push_back(seconds(std::max<int64_t>(
        step_end[static_cast<size_t>(s)] - step_start[static_cast<size_t>(s)], 0)));
  }
  c.step = figure(c.measured_steps_s, predicted_step_s);

  // Per task: medians over the steps.
  c.tasks.resize(graph.num_tasks());
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    c.tasks[id].task = id;
    c.tasks[id].predicted_start_s = predicted[id].start_s;
    c.tasks[id].predicted_s = predicted[id].end_s - predicted[id].start_s;
  }
  for (const MeasuredRank& r : run.ranks) {
    for (size_t i = 0; i < r.tasks.size(); ++i) {
      std::vector<double> starts, lengths;
      for (int s = 0; s < c.steps; ++s) {
        const TaskSpan& span = r.steps[static_cast<size_t>(s)].tasks[i];
        starts.push_back(seconds(span.start_ns - step_start[static_cast<size_t>(s)]));
        lengths.push_back(seconds(span.end_ns - span.start_ns));
      }
      TaskComparison& t = c.tasks[r.tasks[i]];
      t.measured_start_s = quantile(starts, 0.5);
      t.measured_s = quantile(lengths, 0.5);
    }
  }

  // Per kind: the kind's durations summed over every rank, per step.
  for (TaskKind kind : kAllTaskKinds) {
    KindComparison k;
    k.kind = kind;
    std::vector<double> busy(static_cast<size_t>(c.steps), 0.0);
    double predicted_busy = 0;
    for (const MeasuredRank& r : run.ranks) {
      for (size_t i = 0; i < r.tasks.size(); ++i) {
        if (graph.task(r.tasks[i]).kind != kind) continue;
        ++k.tasks;
        predicted_busy += c.tasks[r.tasks[i]].predicted_s;
        for (int s = 0; s < c.steps; ++s) {
          const TaskSpan& span = r.steps[static_cast<size_t>(s)].tasks[i];
          busy[static_cast<size_t>(s)] += seconds(span.end_ns - span.start_ns);
        }
      }
    }
    if (k.tasks == 0) continue;
    k.busy = figure(busy, predicted_busy);
    c.kinds.push_back(k);
  }

  // Per rank: when it finished, and how long its compute tasks ran.
  for (const MeasuredRank& r : run.ranks) {
    RankComparison rc;
    rc.rank = r.rank;
    rc.clock = r.clock;
    std::vector<double> finish(static_cast<size_t>(c.steps), 0.0);
    std::vector<double> compute(static_cast<size_t>(c.steps), 0.0);
    double predicted_finish = 0;
    double predicted_compute = 0;
    for (size_t i = 0; i < r.tasks.size(); ++i) {
      const TaskId id = r.tasks[i];
      const bool is_compute = graph.task(id).kind == TaskKind::kCompute;
      predicted_finish = std::max(predicted_finish, predicted[id].end_s);
      if (is_compute) predicted_compute += c.tasks[id].predicted_s;
      for (int s = 0; s < c.steps; ++s) {
        const TaskSpan& span = r.steps[static_cast<size_t>(s)].tasks[i];
        finish[static_cast<size_t>(s)] =
            std::max(finish[static_cast<size_t>(s)],
                     seconds(span.end_ns - step_start[static_cast<size_t>(s)]));
        if (is_compute) compute[static_cast<size_t>(s)] += seconds(span.end_ns - span.start_ns);
      }
    }
    rc.finish = figure(finish, predicted_finish);
    rc.compute_busy = figure(compute, predicted_compute);
    c.ranks.push_back(rc);
  }
  return c;
}

}  // namespace dtsim::executor
