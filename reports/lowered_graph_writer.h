// The lowered-graph file (`dtsim lower`): a TaskGraph as JSON Lines, written as it is read,
// line by line. Ranks that run the same tasks (kinds, streams, names, durations or bytes,
// op lists, tags and dependencies on their own earlier tasks) share one template; each rank
// adds only its peers and collective calls. docs/scenario-format.md ("Lowered graphs")
// specifies it; scenarios/lowered_graph_reader.h reads it back.
#pragma once

#include <cstdint>
#include <ostream>

#include "models/lowered_graph_format.h"
#include "sim/task_graph.h"

namespace dtsim {

struct LoweredGraphStats {
  int64_t tasks = 0;
  int64_t templates = 0;
  int64_t op_lists = 0;
  int64_t collectives = 0;
};

// Throws std::invalid_argument when a task depends on a task of a later rank (the file is
// written rank by rank, each rank's dependencies before it).
LoweredGraphStats write_lowered_graph(std::ostream& out, const TaskGraph& graph, int ranks);

}  // namespace dtsim
