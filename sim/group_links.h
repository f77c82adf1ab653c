// What a collective's cost estimate needs to know of a group of ranks: its layout over
// nodes and regions, the alpha-beta figures of the links it spans and its devices'
// collective protocols. Shared by the simulation and by planners that run before it.
#pragma once

#include <vector>

#include "sim/collectives/planner.h"
#include "sim/router.h"
#include "sim/topology.h"

namespace dtsim {

GroupLayout group_layout(const Cluster& cluster, const std::vector<int>& members);

// The collective library's protocols for a group: the largest of its devices' latencies
// (the slowest member paces every step), and a protocol only where every member has it,
// at the lowest of their bandwidth fractions.
ProtocolTable group_protocols(const Cluster& cluster, const std::vector<int>& members);

// Alpha-beta figures of the links a group spans, measured on its routes.
AlphaBeta group_alpha_beta(const Cluster& cluster, Router& router, const GroupLayout& layout);

// One call of `op` over `members` by the alpha-beta estimate with the library's protocol
// cost (estimate_time), with `algorithm`, or choose_algorithm's pick for kAuto. A group of
// one takes no time (and the op's first algorithm, for kAuto).
struct GroupCallEstimate {
  CollectiveAlgorithm algorithm;
  Duration time;
};
GroupCallEstimate estimate_group_call(const Cluster& cluster, Router& router, CollectiveOp op,
                                      CollectiveAlgorithm algorithm,
                                      const std::vector<int>& members, Bytes bytes,
                                      const CollectiveOptions& options = {});

}  // namespace dtsim
