// The second step after loading: the scenario's workload lowered to a TaskGraph with the
// cost model the caller chose (the CLI, the GUI, a test). Loading validates, lowering
// prices, simulation runs.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "models/scenario_result.h"
#include "scenarios/scenario.h"
#include "sim/cost_model.h"
#include "sim/run_control.h"

namespace dtsim {

// The cost model a scenario asks for (simulation.cost_model, simulation.costs), or the
// database `costs_option` names (the CLI's --costs, which wins over the scenario's keys).
// Throws ScenarioError naming the key or the option: the measured model reads a cost
// database that calibration writes, and calibration is not part of this build yet.
std::unique_ptr<CostModel> choose_cost_model(const Scenario& scenario,
                                             const std::optional<std::string>& costs_option = {});

// A training step by the model's lowering (both steps with local SGD), a task graph with
// its FLOP-priced tasks priced, or a collective sweep's calls. Throws ScenarioError for a
// plan that cannot run on the scenario's cluster, each problem at the key it names. A stop
// through `control` returns a result marked cancelled.
LoweredScenario lower_scenario(const Scenario& scenario, const CostModel& costs,
                               const RunControl& control = {});

}  // namespace dtsim
