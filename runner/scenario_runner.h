// Load, lower and run a scenario: the one path the CLI, sweeps, the validation report and
// the GUI share.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/scenario_result.h"
#include "scenarios/scenario.h"
#include "sim/cost_model.h"
#include "sim/observer.h"
#include "sim/run_control.h"

namespace dtsim {

// The cost model a scenario asks for (simulation.cost_model, simulation.costs), or the
// database `costs_option` names (the CLI's --costs, which wins over the scenario's keys).
// Throws ScenarioError naming the key or the option: the measured model reads a cost
// database that calibration writes, and calibration is not part of this build yet.
std::unique_ptr<CostModel> choose_cost_model(const Scenario& scenario,
                                             const std::optional<std::string>& costs_option = {});

// Lowers with the cost model the scenario asks for, or the database `costs_option` names.
// Throws ScenarioError.
LoweredScenario lower_with_chosen_costs(const Scenario& scenario,
                                        const std::optional<std::string>& costs_option = {},
                                        const RunControl& control = {});

// Runs a lowered scenario on a fresh Simulation (and the local SGD step on another). Throws
// std::invalid_argument for an unknown network model (the loader rejects those).
ScenarioRun run_scenario(const Scenario& scenario, const LoweredScenario& lowered,
                         const std::vector<SimObserver*>& observers = {},
                         const RunControl& control = {});
// The run's records (collective labels) view the lowered graph: it must outlive them.
ScenarioRun run_scenario(const Scenario& scenario, LoweredScenario&& lowered,
                         const std::vector<SimObserver*>& observers = {},
                         const RunControl& control = {}) = delete;

}  // namespace dtsim
