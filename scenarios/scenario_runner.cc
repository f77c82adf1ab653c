// Scenario execution: build a Simulation, subscribe observers, run the TaskGraph, time it.
#include "scenarios/scenario_runner.h"

#include <chrono>

namespace dtsim {

ScenarioRun run_scenario(const Scenario& scenario, const std::vector<SimObserver*>& observers) {
  const auto t0 = std::chrono::steady_clock::now();
  SimulationOptions options;
  options.network_model = scenario.simulation.network_model;
  options.fast_forward = scenario.simulation.fast_forward;
  Simulation sim(scenario.cluster, options);
  for (SimObserver* o : observers) sim.add_observer(o);
  ScenarioRun run;
  run.result = sim.run(scenario.graph);
  if (scenario.training && scenario.training->local_step) {
    Simulation local(scenario.cluster, options);
    run.local_step = local.run(scenario.training->local_step->graph);
  }
  run.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const LinkStatsTable& table = sim.network().link_stats();
  run.links.reserve(table.size());
  for (LinkId l = 0; l < table.size(); ++l) run.links.push_back(table.stats(l));
  return run;
}

}  // namespace dtsim
