// Load, lower and run a scenario: the one path the CLI, sweeps, the validation report and
// the GUI share.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calibration/cost_database.h"
#include "models/scenario_result.h"
#include "runner/memory_estimate.h"
#include "scenarios/scenario.h"
#include "sim/cost_model.h"
#include "sim/observer.h"
#include "sim/run_control.h"

namespace dtsim {

// What the caller chose about costs: a cost database (the CLI's --costs, which wins over
// the scenario's simulation.cost_model and simulation.costs), and the scenario device it
// prices when that is not the device it was measured on (--costs-device).
struct CostsChoice {
  std::optional<std::string> database;
  std::optional<std::string> device;
};

// The cost model the scenario or `choice` asks for: the roofline, or the measured model
// over a cost database (calibration/), with the roofline for what the database lacks.
// Throws InputError naming the database file and its field (exit 2) for a database of
// another version, or one measured on a device the scenario does not have (unless
// `choice.device` maps it), and ScenarioError for an unreadable one named by the scenario.
std::unique_ptr<CostModel> choose_cost_model(const Scenario& scenario,
                                             const CostsChoice& choice = {});

// Lowers with the cost model the scenario or `choice` asks for. A database with measured
// links first puts them in place of the catalog's figures in `scenario`'s cluster
// (runner/measured_links.h), so run the lowered graph on this scenario. Before it lowers,
// it estimates the memory of the graph and of what `budget` says the caller does with it,
// and throws MemoryLimitError (exit 2) when that exceeds the budget's limit (by default
// the machine's available memory). Throws as above.
LoweredScenario lower_with_chosen_costs(Scenario& scenario, const CostsChoice& choice = {},
                                        const RunControl& control = {},
                                        const MemoryBudget& budget = {});

// Lowers with the measured model over `db`, which prices the scenario device `device` (a
// database in memory: the feedback of a real run, dtsim validate); checks memory as above.
LoweredScenario lower_with_database(Scenario& scenario, const calibration::CostDatabase& db,
                                    const std::string& device, const RunControl& control = {},
                                    const MemoryBudget& budget = {});

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
