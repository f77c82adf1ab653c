// Layout, link figures and protocols of a group of ranks, and one call's estimate.
#include "sim/group_links.h"

#include <algorithm>

namespace dtsim {

GroupLayout group_layout(const Cluster& cluster, const std::vector<int>& members) {
  GroupLayout layout;
  layout.members = members;
  for (int r : members) {
    layout.node_of.push_back(cluster.devices[r].node);
    layout.region_of.push_back(cluster.devices[r].region);
  }
  return layout;
}

ProtocolTable group_protocols(const Cluster& cluster, const std::vector<int>& members) {
  ProtocolTable table{};
  for (size_t p = 0; p < table.size(); ++p) {
    ProtocolCosts& t = table[p];
    for (size_t i = 0; i < members.size(); ++i) {
      const ProtocolCosts& c =
          cluster.devices[members[i]].spec->efficiency.collective_protocols[p];
      t.base = std::max(t.base, c.base);
      t.intra_node_step = std::max(t.intra_node_step, c.intra_node_step);
      t.network_step = std::max(t.network_step, c.network_step);
      t.bandwidth_fraction =
          i == 0 ? c.bandwidth_fraction : std::min(t.bandwidth_fraction, c.bandwidth_fraction);
    }
  }
  return table;
}

AlphaBeta group_alpha_beta(const Cluster& cluster, Router& router, const GroupLayout& layout) {
  // For each level, the first pair of members that differs at that level (and not at a
  // higher one) stands for the level: builders make levels uniform within a cluster.
  AlphaBeta ab;
  bool have_intra = false, have_inter = false, have_region = false;
  const auto& m = layout.members;
  for (size_t i = 1; i < m.size(); ++i) {
    const VertexId a = cluster.devices[m[0]].vertex;
    const VertexId b = cluster.devices[m[i]].vertex;
    if (!have_region && layout.region_of[i] != layout.region_of[0]) {
      ab.inter_region_alpha = router.route_latency(a, b);
      ab.inter_region_bw = router.route_bottleneck(a, b);
      have_region = true;
    } else if (!have_inter && layout.region_of[i] == layout.region_of[0] &&
               layout.node_of[i] != layout.node_of[0]) {
      ab.inter_node_alpha = router.route_latency(a, b);
      ab.inter_node_bw = router.route_bottleneck(a, b);
      have_inter = true;
    } else if (!have_intra && layout.node_of[i] == layout.node_of[0]) {
      ab.intra_node_alpha = router.route_latency(a, b);
      ab.intra_node_bw = router.route_bottleneck(a, b);
      have_intra = true;
    }
  }
  // Levels the group does not span take the next level's figures, so that estimates
  // never divide by a zero bandwidth.
  if (!have_inter && have_region) {
    ab.inter_node_alpha = ab.inter_region_alpha;
    ab.inter_node_bw = ab.inter_region_bw;
  }
  if (!have_intra) {
    ab.intra_node_alpha = ab.inter_node_alpha;
    ab.intra_node_bw = ab.inter_node_bw;
  }
  if (!have_inter && !have_region) {
    ab.inter_node_alpha = ab.intra_node_alpha;
    ab.inter_node_bw = ab.intra_node_bw;
  }
  if (!have_region) {
    ab.inter_region_alpha = ab.inter_node_alpha;
    ab.inter_region_bw = ab.inter_node_bw;
  }
  ab.protocols = group_protocols(cluster, m);
  return ab;
}

GroupCallEstimate estimate_group_call(const Cluster& cluster, Router& router, CollectiveOp op,
                                      CollectiveAlgorithm algorithm,
                                      const std::vector<int>& members, Bytes bytes,
                                      const CollectiveOptions& options) {
  const bool chosen = algorithm == CollectiveAlgorithm::kAuto;
  if (members.size() <= 1) {
    return {chosen ? algorithms_for(op).front() : algorithm, Duration::zero()};
  }
  const GroupLayout layout = group_layout(cluster, members);
  const AlphaBeta ab = group_alpha_beta(cluster, router, layout);
  if (chosen) algorithm = choose_algorithm(op, layout, bytes, options, ab);
  return {algorithm, estimate_time(op, algorithm, layout, bytes, options, ab)};
}

}  // namespace dtsim
