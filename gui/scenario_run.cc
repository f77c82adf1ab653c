// Loading, lowering, running and recording one scenario document for the GUI.
#include "gui/scenario_run.h"

#include "reports/summary.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"

namespace dtsim::gui {

double RunData::step_seconds() const {
  if (training()) return summary["training"]["iteration_time_s"].get<double>();
  return summary["simulated_time_s"].get<double>();
}

std::shared_ptr<RunData> run_document(const nlohmann::ordered_json& document,
                                      const std::string& source, const RunControl& control,
                                      bool record) {
  auto data = std::make_shared<RunData>();
  data->source = source;
  data->document = document;
  data->scenario =
      std::make_unique<Scenario>(load_scenario(nlohmann::json::parse(document.dump()), source));
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
  if (data->recording) data->recording->sort_spans();
  SummaryOptions options;
  options.include_wall_time = false;
  data->summary = make_summary(data->lowered, data->run, options);
  return data;
}

}  // namespace dtsim::gui
