// Runs a loaded scenario on a fresh Simulation: the one path the CLI, sweeps and the GUI
// share.
#pragma once

#include <optional>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/simulation.h"

namespace dtsim {

struct ScenarioRun {
  RunResult result;
  // Training with local SGD across regions: the run of an iteration that synchronizes only
  // inside each region (observers see the synchronizing iteration only).
  std::optional<RunResult> local_step;
  double wall_time_s = 0;  // host time spent in the simulation proper
  std::vector<LinkStats> links;  // indexed by LinkId, closed at the end of the run
};

// Throws std::invalid_argument for an unknown network model (the loader rejects those).
ScenarioRun run_scenario(const Scenario& scenario, const std::vector<SimObserver*>& observers = {});

}  // namespace dtsim
