// One validation case: load, lower, run, compare with the published figure.
#include "runner/validation_cases.h"

#include <algorithm>
#include <stdexcept>

#include "reports/training_summary.h"
#include "runner/memory_admission.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"

namespace dtsim {

namespace {

// A collective sweep against a table of published times, size by size.
std::vector<ValidationRow> run_collective_case(const std::string& path, Scenario& scenario,
                                               uint64_t* resident_at_end) {
  const Reference& ref = *scenario.reference;
  CollectiveSweep& sweep = scenario.collective;
  if (scenario.workload_kind != WorkloadKind::kCollective || sweep.ops.size() != 1 ||
      sweep.algorithms.size() != 1) {
    throw std::runtime_error(path +
                             ": a collective_time_us reference compares a collective sweep of "
                             "one operation and one algorithm (workload.ops, workload.algorithms)");
  }
  sweep.sizes.clear();
  for (const auto& [bytes, time] : ref.sizes) sweep.sizes.push_back(bytes);
  sweep.iterations = 1;
  scenario.simulation.trace = false;
  const LoweredScenario lowered = lower_with_chosen_costs(scenario);
  const ScenarioRun run = run_scenario(scenario, lowered);
  if (resident_at_end != nullptr) *resident_at_end = resident_memory_bytes();
  if (!run.result.stalled.empty()) {
    throw std::runtime_error(path + ": the run did not complete: " + run.result.stalled.front());
  }
  std::vector<ValidationRow> rows;
  for (const auto& [bytes, time] : ref.sizes) {
    const auto rec = std::find_if(run.result.collectives.begin(), run.result.collectives.end(),
                                  [&](const CollectiveRecord& r) { return r.bytes == bytes; });
    if (rec == run.result.collectives.end()) {
      throw std::runtime_error(path + ": the sweep ran no call of " +
                               std::to_string(bytes.count()) + " bytes");
    }
    ValidationRow row;
    row.scenario = path;
    row.name = scenario.name;
    row.source = ref.source;
    row.metric = ref.metric;
    row.bytes = bytes.count();
    row.algorithm = std::string(algorithm_name(rec->algorithm));
    row.reference = time;
    row.predicted = (rec->end - rec->start).seconds() * 1e6;
    row.error = (row.predicted - row.reference) / row.reference;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

std::vector<ValidationRow> run_validation_case(const std::string& path, uint64_t* resident_at_end) {
  Scenario scenario = load_scenario_file(path);
  if (!scenario.reference) {
    throw NoReference(path +
                      ": a validation scenario needs a \"reference\" block "
                      "(source, metric, value)");
  }
  if (scenario.reference->metric == "collective_time_us") {
    return run_collective_case(path, scenario, resident_at_end);
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
  row.stack_modelled = scenario.reference->stack_modelled;
  row.stack_note = scenario.reference->stack_note;
  return {row};
}

}  // namespace dtsim
