// Crowding of a lowered graph's compute tasks: from kernels timed beside co-runners and
// alone (OpCost::co_runners), each task's time alone as a fraction of its crowded time.
#pragma once

#include "sim/cost_model.h"
#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim::models {

// Sets TaskGraph::set_crowding on every compute task with ops whose kernels `costs` priced
// beside co-runners on its rank's device; nothing when the model prices none so. Tasks of
// one op list on one device type share the figure (each list is priced once per device).
void set_task_crowding(const Cluster& cluster, const CostModel& costs, TaskGraph& graph);

}  // namespace dtsim::models
