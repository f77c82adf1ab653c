// Predicted against measured, for the whole step, per task kind, per rank and per task: the
// figures `dtsim validate` reports. A signed relative error is (predicted - measured) /
// measured: positive when the simulator predicts too slow a step.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "executor/measured_timeline.h"
#include "sim/observer.h"
#include "sim/task_graph.h"

namespace dtsim::executor {

// What the simulator says of one task (a TaskRecord's times, in seconds from step start).
struct PredictedTask {
  double start_s = 0;
  double end_s = 0;
  bool seen = false;
};

// Measured over the steps (median with the 10th and 90th percentiles) against predicted.
struct ErrorFigure {
  double measured_s = 0;
  double measured_p10_s = 0;
  double measured_p90_s = 0;
  double predicted_s = 0;
  double error = 0;  // (predicted - measured) / measured; 0 when both are 0
};

struct KindComparison {
  TaskKind kind = TaskKind::kCompute;
  int tasks = 0;     // tasks of the kind over all ranks, per step
  ErrorFigure busy;  // their summed durations over all ranks, per step
};

struct RankComparison {
  int rank = 0;
  ErrorFigure finish;        // its last task's end, from the step's start
  ErrorFigure compute_busy;  // its compute tasks' summed durations
  ClockOffset clock;
};

struct TaskComparison {
  TaskId task = 0;
  double measured_start_s = 0;  // median over the steps, from the step's start
  double measured_s = 0;        // median duration
  double predicted_start_s = 0;
  double predicted_s = 0;
};

struct StepComparison {
  int steps = 0;
  std::vector<double> measured_steps_s;  // each measured step, in order
  ErrorFigure step;
  std::vector<KindComparison> kinds;  // the kinds present, in kAllTaskKinds order
  std::vector<RankComparison> ranks;
  std::vector<TaskComparison> tasks;  // every task, by id
};

// One op signature's time inside the real steps against the prediction's price of it.
struct OpComparison {
  OpSignature op;
  int instances = 0;       // op-list positions running it, over every rank, per step
  double measured_s = 0;   // median over instances and steps
  double predicted_s = 0;  // the cost model's price
  double total_gap_s = 0;  // instances x (predicted - measured): its share of the gap
};

// The prediction again with each op's time measured inside the steps (the feedback that
// dtsim validate --update-costs writes into the cost database). Fed every step, it mostly
// reproduces what it was fed; the held-out figures are the test: the costs of the first
// half of the steps predicting the measured median of the second half.
struct FeedbackFigures {
  bool available = false;
  std::string why_not;             // when not available
  double predicted_s = 0;          // with the in-step costs of every step
  double error = 0;                // against every step's median
  int fed_steps = 0;               // the first half, whose ops' times are fed
  int held_steps = 0;              // the second half, predicted
  double held_measured_s = 0;      // the held-out steps' median
  double held_isolated_error = 0;  // the isolated costs' prediction against them
  double held_predicted_s = 0;     // the fed costs' prediction
  double held_error = 0;           // against them
};

// `predicted` is indexed by task id (every task seen); `predicted_step_s` is the simulated
// step time. Throws std::invalid_argument when the run and the graph disagree (a rank's task
// list differs from the graph's, steps missing).
StepComparison compare_step(const TaskGraph& graph, const MeasuredRun& run,
                            std::span<const PredictedTask> predicted, double predicted_step_s);

// (predicted - measured) / measured; 0 when both are 0, infinite when only measured is.
double relative_error(double predicted, double measured);

// The q-quantile (0..1) of `values` by linear interpolation between order statistics.
double quantile(std::vector<double> values, double q);

// Collects a simulation's task records by task id, for compare_step.
class PredictionRecorder final : public SimObserver {
 public:
  explicit PredictionRecorder(size_t tasks) : tasks_(tasks) {}
  void on_task(const TaskRecord& r) override {
    tasks_[r.task] = {r.start.seconds(), r.end.seconds(), true};
  }
  const std::vector<PredictedTask>& tasks() const { return tasks_; }

 private:
  std::vector<PredictedTask> tasks_;
};

}  // namespace dtsim::executor
