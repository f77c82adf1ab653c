// Collective parameters shared by the sweep workload and task-graph collectives: op and
// algorithm names, options, and whether an (op, algorithm) pair applies to a group.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scenarios/json_reader.h"
#include "sim/collectives/collective_plan.h"
#include "sim/group_links.h"
#include "sim/topology.h"

namespace dtsim::scenario_detail {

std::optional<CollectiveOp> read_op(const json& value, const std::string& pointer, Diagnostics& d);
std::optional<CollectiveAlgorithm> read_algorithm(const json& value, const std::string& pointer,
                                                  Diagnostics& d);

// Reads `chunk_bytes`, `torus_dims` and `root` of `o` into `out`; false after reporting.
bool read_collective_options(JsonObject& o, CollectiveOptions& out);

// Reports a broadcast/reduce root that is not an index into a group of `group_size`.
bool check_root(const CollectiveOptions& options, size_t group_size, const std::string& pointer,
                Diagnostics& d);

// "" when `algorithm` implements `op` and applies to the group (for kAuto: when some
// algorithm does), else a sentence saying which pair fails and why.
std::string pair_error(CollectiveOp op, CollectiveAlgorithm algorithm, const GroupLayout& layout,
                       const CollectiveOptions& options);

}  // namespace dtsim::scenario_detail
