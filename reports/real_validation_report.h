// What `dtsim validate` writes: validation.json (predicted against measured, for the step,
// per task kind, per rank and per task), validation.md (the same for a reader) and
// trace.json (Perfetto: the measured median step and the predicted step side by side, one
// process track each, a thread track per rank and stream).
#pragma once

#include <filesystem>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "executor/measured_timeline.h"
#include "executor/step_comparison.h"
#include "sim/task_graph.h"

namespace dtsim {

struct RealValidationView {
  std::string scenario;    // its name
  std::string source;      // its file
  std::string cost_model;  // what priced the prediction's ops
  std::string costs;       // the cost database, or "" for the roofline
  const TaskGraph* graph = nullptr;
  const executor::MeasuredRun* measured = nullptr;
  const executor::StepComparison* comparison = nullptr;
  std::span<const executor::PredictedTask> predicted;
  std::span<const executor::OpComparison> ops;  // the largest share of the gap first
  const executor::FeedbackFigures* feedback = nullptr;
  // The machine's speed (calibration/speed_reference.h) when the database was measured and
  // around the run; 0 when not taken.
  double calibration_reference_s = 0;
  double run_reference_s = 0;
};

// How much slower the machine ran around the run than when its database was measured
// (run_reference_s / calibration_reference_s), and the step's error had the prediction been
// priced at the run's speed ((predicted x ratio - measured) / measured): the whole step is
// scaled, its communication too (a CPU rank's MPI copies run on its core; an emulated link's
// time does not scale, so for such a case it is an approximation). Both 0 (ratio) and NaN
// (error) without the references.
double machine_speed_ratio(const RealValidationView& v);
double error_at_run_speed(const RealValidationView& v);

nlohmann::ordered_json real_validation_json(const RealValidationView& v);
std::string real_validation_markdown(const RealValidationView& v);
nlohmann::ordered_json real_validation_trace(const RealValidationView& v);

// The three files in `folder`, each written whole or not at all.
void write_real_validation(const std::filesystem::path& folder, const RealValidationView& v);

// A signed relative error as "+1.2%", "n/a" when it is not finite.
std::string signed_percent(double error);

// The measured step nearest the median (the one the trace shows).
size_t median_step_index(const executor::StepComparison& c);

}  // namespace dtsim
