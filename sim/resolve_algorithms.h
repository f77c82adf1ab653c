// Settling `auto` collective algorithms once, before a run, where a real executor and a
// written graph can read them.
#pragma once

#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim {

// Sets every call of `graph` left at CollectiveAlgorithm::kAuto to the algorithm the
// simulation would choose for it: choose_algorithm on the group's layout and the alpha-
// beta figures measured on its routes (the first algorithm of the op for a group of one).
// Deterministic, so a run of the settled graph is the run of the unsettled one.
void resolve_auto_algorithms(TaskGraph& graph, const Cluster& cluster);

}  // namespace dtsim
