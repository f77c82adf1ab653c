// The second step after loading: the scenario's workload lowered to a TaskGraph with the
// cost model the caller chose (the CLI, the GUI, a test). Loading validates, lowering
// prices, simulation runs.
#pragma once

#include <optional>
#include <vector>

#include "models/scenario_result.h"
#include "scenarios/scenario.h"
#include "sim/cost_model.h"
#include "sim/run_control.h"

namespace dtsim {

// A training step by the model's lowering (both steps with local SGD), a task graph with
// its FLOP-priced tasks priced, or a collective sweep's calls. Throws ScenarioError for a
// plan that cannot run on the scenario's cluster, each problem at the key it names. A stop
// through `control` returns a result marked cancelled.
LoweredScenario lower_scenario(const Scenario& scenario, const CostModel& costs,
                               const RunControl& control = {});
// What lower_scenario's graphs will hold, counted before they are built: a training step
// from a sample of its ranks (models::estimate_step), a task graph or a collective sweep as
// it is. Throws ScenarioError for a plan that cannot run.
struct LoweredCounts {
  TaskGraphCounts graph;
  std::optional<TaskGraphCounts> local_graph;  // local SGD's in-region step
  std::vector<TaskGraphCounts> phase_graphs;   // a batch-size schedule's simulated steps
  double lowering_working_bytes = 0;  // what lowering a training step holds besides its graph
  // What simulating it holds in the network (Simulation::network_bytes_for).
  double network_bytes = 0;
};
// `observed`: the run will have observers (a trace, task times), under which the flow
// model replays no phase (FlowNetworkModel, PHASE REPLAY), and so keeps none.
LoweredCounts estimate_lowered_counts(const Scenario& scenario, const CostModel& costs,
                                      bool observed = false);

// The result points at the scenario's cluster: lowering a temporary would leave it dangling.
LoweredScenario lower_scenario(Scenario&& scenario, const CostModel& costs,
                               const RunControl& control = {}) = delete;

}  // namespace dtsim
