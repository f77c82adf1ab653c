// Reading a lowered-graph file (reports/lowered_graph_writer.h) back into a TaskGraph, one
// line at a time, checking every field against the cluster it will run on.
#pragma once

#include <istream>
#include <optional>
#include <string>

#include "sim/task_graph.h"

namespace dtsim {

// Returns the graph, or nullopt with `error` set to "line N: <field>: <what was expected>"
// (or a whole-file problem). `ranks` is the cluster's: the file must have exactly as many.
std::optional<TaskGraph> read_lowered_graph(std::istream& in, int ranks, std::string& error);

}  // namespace dtsim
