// Scenario execution: choose the costs, lower, build a Simulation, subscribe observers, run
// the TaskGraph, time it.
#include "runner/scenario_runner.h"

#include <chrono>
#include <filesystem>

#include "models/cost_model.h"
#include "scenarios/loader.h"

#include "scenarios/scenario_lowering.h"

namespace dtsim {

namespace {

// A database path as the scenario wrote it, resolved against the scenario's folder.
std::string scenario_relative(const Scenario& s, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || s.source.empty() || s.source.front() == '<') return path;
  return (std::filesystem::path(s.source).parent_path() / p).lexically_normal().string();
}

}  // namespace

std::unique_ptr<CostModel> choose_cost_model(const Scenario& scenario,
                                             const std::optional<std::string>& costs_option) {
  if (costs_option) {
    throw ScenarioError("--costs " + *costs_option,
                        {{"",
                          "the measured cost model reads a cost database written by `dtsim "
                          "calibrate`, which this build does not have yet; leave --costs out "
                          "to use the roofline model"}});
  }
  if (scenario.simulation.cost_model == "measured") {
    throw ScenarioError(
        scenario.source,
        {{"/simulation/cost_model",
          "\"measured\" (costs " +
              scenario_relative(scenario, scenario.simulation.costs_file.value_or("")) +
              ") needs the cost database written by `dtsim calibrate`, which this build does "
              "not have yet; use \"roofline\""}});
  }
  return std::make_unique<models::RooflineCostModel>();
}

LoweredScenario lower_with_chosen_costs(const Scenario& scenario,
                                        const std::optional<std::string>& costs_option,
                                        const RunControl& control) {
  const auto costs = choose_cost_model(scenario, costs_option);
  return lower_scenario(scenario, *costs, control);
}

ScenarioRun run_scenario(const Scenario& scenario, const LoweredScenario& lowered,
                         const std::vector<SimObserver*>& observers, const RunControl& control) {
  const auto t0 = std::chrono::steady_clock::now();
  SimulationOptions options;
  options.network_model = scenario.simulation.network_model;
  options.fast_forward = scenario.simulation.fast_forward;
  Simulation sim(scenario.cluster, options);
  for (SimObserver* o : observers) sim.add_observer(o);
  ScenarioRun run;
  run.result = sim.run(lowered.graph, control);
  if (lowered.local_graph && !run.result.cancelled) {
    Simulation local(scenario.cluster, options);
    run.local_step = local.run(*lowered.local_graph, control);
    run.result.cancelled = run.local_step->cancelled;
  }
  run.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const LinkStatsTable& table = sim.network().link_stats();
  run.links.reserve(table.size());
  for (LinkId l = 0; l < table.size(); ++l) run.links.push_back(table.stats(l));
  return run;
}

}  // namespace dtsim
