// Loading, lowering, running and recording one scenario document for the GUI.
#include "gui/scenario_run.h"

#include <optional>

#include "reports/headline_figures.h"
#include "reports/summary.h"
#include "runner/memory_estimate.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"
#include "sim/critical_path.h"

namespace dtsim::gui {

double RunData::step_seconds() const { return dtsim::step_seconds(summary); }

Scenario load_document(const nlohmann::ordered_json& document, const std::string& source) {
  // The loader reads nlohmann::json; the GUI keeps the file's key order (ordered_json).
  return load_scenario(nlohmann::json::parse(document.dump()), source);
}

std::shared_ptr<RunData> run_document(const nlohmann::ordered_json& document,
                                      const std::string& source, const RunControl& control,
                                      bool record, const RecordingChoice& choice) {
  auto data = std::make_shared<RunData>();
  data->source = source;
  data->document = document;
  data->scenario = std::make_unique<Scenario>(load_document(document, source));
  // A recording keeps spans and, for the critical path, every task's times.
  MemoryBudget budget;
  budget.outputs.task_times = record;
  budget.outputs.spans = record ? choice.max_spans : 0;
  data->lowered = lower_with_chosen_costs(*data->scenario, {}, control, budget);
  if (data->lowered.cancelled || control.stop_requested()) return nullptr;
  const TaskGraph& graph = data->lowered.graph;
  std::vector<SimObserver*> observers;
  // The critical path needs every rank's times: from the spans when every rank is
  // recorded, else from times recorded for it alone (16 bytes a task).
  std::optional<TaskTimesRecorder> times;
  if (record) {
    data->recording = std::make_unique<RunRecording>(graph, data->scenario->cluster.num_ranks(),
                                                     choice.ranks_first, choice.max_spans);
    observers.push_back(data->recording.get());
    if (!data->recording->complete()) observers.push_back(&times.emplace(graph.num_tasks()));
  }
  data->run = run_scenario(*data->scenario, data->lowered, observers, control);
  if (data->run.result.cancelled || control.stop_requested()) return nullptr;
  if (data->recording) {
    data->recording->sort_spans();
    const RunRecording& rec = *data->recording;
    std::optional<TaskTimes> from_spans;
    if (!times) {
      from_spans.emplace(graph.num_tasks());
      for (int r = 0; r < rec.ranks(); ++r) {
        for (const Span& span : rec.spans(r)) from_spans->record(span.task, span.start, span.end);
      }
    }
    const auto path = critical_path(graph, times ? times->times() : *from_spans);
    data->on_critical_path.assign(graph.num_tasks(), false);
    for (const CriticalStep& step : path) data->on_critical_path[step.task] = true;
    data->critical_steps = path.size();
  }
  SummaryOptions options;
  options.include_wall_time = false;
  data->summary = make_summary(data->lowered, data->run, options);
  return data;
}

}  // namespace dtsim::gui
