// One run of a scenario document as the GUI holds it: the loaded scenario, its lowered
// graph, the simulation's result, the summary `dtsim run` prints and the recording the
// views draw. Qt-free, so that the worker thread, sweeps and tests share it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gui/run_recording.h"
#include "models/scenario_result.h"
#include "scenarios/scenario.h"
#include "sim/run_control.h"

namespace dtsim::gui {

struct RunData {
  std::string source;  // the scenario file, or "<unsaved>"
  nlohmann::ordered_json document;
  std::unique_ptr<Scenario> scenario;  // the lowered graph points into its cluster
  LoweredScenario lowered;
  ScenarioRun run;
  nlohmann::ordered_json summary;  // make_summary without wall time, as `dtsim run` writes it
  std::unique_ptr<RunRecording> recording;  // null for a run made without one (sweeps)
  // The run's critical path (sim/critical_path.h), for a run with a recording: whether
  // each task is on it, and how many are.
  std::vector<bool> on_critical_path;
  size_t critical_steps = 0;

  bool training() const { return summary.contains("training"); }
  // The simulated step: the training iteration (with local SGD, the mean one), else the
  // whole simulated time.
  double step_seconds() const;
};

// Loads and validates a document the GUI holds (relative paths in it are relative to
// `source`). Throws as load_scenario does.
Scenario load_document(const nlohmann::ordered_json& document, const std::string& source);

// Which ranks' tasks a recording keeps (RunRecording): these first, then from rank 0 up,
// within the span budget.
struct RecordingChoice {
  std::vector<int> ranks_first;
  int64_t max_spans = kSpanBudget;
};

// Loads `document` (relative paths in it are relative to `source`), lowers it with the
// cost model it asks for, runs it and, with `record`, records it for the views (a sweep's
// points need the summary only) and finds its critical path. Returns nullptr when
// `control` stopped it. Throws InputError (ScenarioError) for bad input, other exceptions
// for internal errors.
std::shared_ptr<RunData> run_document(const nlohmann::ordered_json& document,
                                      const std::string& source, const RunControl& control = {},
                                      bool record = true, const RecordingChoice& choice = {});

}  // namespace dtsim::gui
