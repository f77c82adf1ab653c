// Load, lower and run a scenario: the one path the CLI, sweeps, the validation report and
// the GUI share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/scenario_result.h"
#include "scenarios/scenario.h"
#include "sim/observer.h"
#include "sim/run_control.h"

namespace dtsim {

// Lowers with the cost model the scenario asks for, or the database `costs_option` names
// (see choose_cost_model). Throws ScenarioError.
LoweredScenario lower_with_chosen_costs(const Scenario& scenario,
                                        const std::optional<std::string>& costs_option = {},
                                        const RunControl& control = {});

// Runs a lowered scenario on a fresh Simulation (and the local SGD step on another). Throws
// std::invalid_argument for an unknown network model (the loader rejects those).
ScenarioRun run_scenario(const Scenario& scenario, const LoweredScenario& lowered,
                         const std::vector<SimObserver*>& observers = {},
                         const RunControl& control = {});

}  // namespace dtsim
