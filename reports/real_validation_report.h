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
};

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
