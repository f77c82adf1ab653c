// One validation case: load, lower, run, compare with the published figure.
#include "runner/validation_cases.h"

#include <stdexcept>

#include "reports/training_summary.h"
#include "runner/memory_admission.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"

namespace dtsim {

ValidationRow run_validation_case(const std::string& path, uint64_t* resident_at_end) {
  Scenario scenario = load_scenario_file(path);
  if (!scenario.reference) {
    throw NoReference(path +
                      ": a validation scenario needs a \"reference\" block "
                      "(source, metric, value)");
  }
  if (!scenario.training) {
    throw std::runtime_error(path +
                             ": a reference compares a training step's figures; the "
                             "scenario needs \"model\", \"training\" and \"parallelism\"");
  }
  const LoweredScenario lowered = lower_with_chosen_costs(scenario);
  const ScenarioRun run = run_scenario(scenario, lowered);
  if (resident_at_end != nullptr) *resident_at_end = resident_memory_bytes();
  if (!run.result.stalled.empty()) {
    throw std::runtime_error(path + ": the run did not complete: " + run.result.stalled.front());
  }
  const auto ref = make_reference_summary(*scenario.reference, make_training_summary(lowered, run));
  if (ref.at("predicted").is_null()) {
    throw std::runtime_error(path + ": reference metric \"" + scenario.reference->metric +
                             "\" has no predicted value (for time_to_train_s, give the run's "
                             "length in \"training\")");
  }
  ValidationRow row;
  row.scenario = path;
  row.name = scenario.name;
  row.source = scenario.reference->source;
  row.metric = scenario.reference->metric;
  row.reference = scenario.reference->value;
  row.predicted = ref.at("predicted").get<double>();
  row.error = ref.at("error").get<double>();
  return row;
}

}  // namespace dtsim
