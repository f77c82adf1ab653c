// `dtsim validate`: a scenario's step run for real (mpirun, one dtsim-rank per rank, pinned
// one per core) and simulated with the same cost database, compared task by task.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "executor/measured_timeline.h"
#include "executor/progress_board.h"
#include "executor/step_comparison.h"
#include "models/scenario_result.h"
#include "reports/real_validation_report.h"
#include "runner/scenario_runner.h"
#include "scenarios/scenario.h"

namespace dtsim {

struct RealRunOptions {
  std::string scenario;  // the scenario file
  std::vector<std::string> overrides;
  CostsChoice costs;
  std::filesystem::path rank_program;  // dtsim-rank
  int warmup = 2;
  int iterations = 5;
  // A rank that has not finished by then (a hang) ends the run: every process is killed.
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  std::stop_token stop;
  std::filesystem::path folder;  // the ranks' timelines, progress boards and mpirun's log
  // Where to write `costs.database` with the ops' in-step times added (needs a database).
  std::optional<std::filesystem::path> update_costs;
  // Each rank in a network namespace, the paths between them emulated (emulated_network.h)
  // by `link_emulator` (dtsim-link-emulator), MPI over TCP on them.
  bool emulate_links = false;
  std::filesystem::path link_emulator;
};

struct RealValidation {
  std::unique_ptr<Scenario> scenario;  // the lowered graph's cluster lives in it
  LoweredScenario lowered;
  double predicted_step_s = 0;
  std::vector<executor::PredictedTask> predicted;  // by task id
  executor::MeasuredRun measured;
  executor::StepComparison comparison;
  std::vector<executor::OpComparison> ops;  // the largest share of the gap first
  executor::FeedbackFigures feedback;       // with a cost database only
  // The machine's speed (calibration/speed_reference.h) when the database was measured and
  // around the real run (the mean of just before and just after); 0 without a database or
  // a reference in it.
  double calibration_reference_s = 0;
  double run_reference_s = 0;
  bool cancelled = false;  // stopped before the ranks finished: nothing else is whole
};

// Throws InputError for a scenario the CPU ranks cannot run as given (an op without a CPU
// kernel, more ranks than cores, local SGD), and std::runtime_error for a run that failed:
// the message names each rank that did not finish, the step and the last task it started.
RealValidation validate_for_real(const RealRunOptions& options);

// What the report writers read of `v` (reports/real_validation_report.h); `costs` names the
// database the prediction used ("" for the roofline).
RealValidationView view_of(const RealValidation& v, const std::string& costs);

// The step the simulator predicts for the scenario of `o` priced by `db` (a fresh load and
// lowering, as the ranks do).
double predict_step(const RealRunOptions& o, const calibration::CostDatabase& db);

// One sentence per rank of where a failed run's ranks were (their progress boards).
std::vector<std::string> describe_rank_progress(const TaskGraph& graph,
                                                const std::filesystem::path& folder, int ranks,
                                                int steps);

}  // namespace dtsim
