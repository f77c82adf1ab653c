// Loading, lowering, running and recording one scenario document for the GUI.
#include "gui/scenario_run.h"

#include "reports/headline_figures.h"
#include "reports/summary.h"
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
                                      bool record) {
  auto data = std::make_shared<RunData>();
  data->source = source;
  data->document = document;
  data->scenario = std::make_unique<Scenario>(load_document(document, source));
  data->lowered = lower_with_chosen_costs(*data->scenario, {}, control);
  if (data->lowered.cancelled || control.stop_requested()) return nullptr;
  std::vector<SimObserver*> observers;
  if (record) {
    data->recording =
        std::make_unique<RunRecording>(data->lowered.graph, data->scenario->cluster.num_ranks());
    observers.push_back(data->recording.get());
  }
  data->run = run_scenario(*data->scenario, data->lowered, observers, control);
  if (data->run.result.cancelled || control.stop_requested()) return nullptr;
  if (data->recording) {
    data->recording->sort_spans();
    const RunRecording& rec = *data->recording;
    if (rec.recorded_ranks() == rec.ranks()) {
      TaskTimes times(data->lowered.graph.num_tasks());
      for (const auto& rank : rec.spans()) {
        for (const Span& span : rank) times.record(span.task, span.start, span.end);
      }
      const auto path = critical_path(data->lowered.graph, times);
      data->on_critical_path.assign(data->lowered.graph.num_tasks(), false);
      for (const CriticalStep& step : path) data->on_critical_path[step.task] = true;
      data->critical_steps = path.size();
    }
  }
  SummaryOptions options;
  options.include_wall_time = false;
  data->summary = make_summary(data->lowered, data->run, options);
  return data;
}

}  // namespace dtsim::gui
