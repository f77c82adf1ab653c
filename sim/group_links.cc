// Layout, link figures and protocols of a group of ranks, and one call's estimate.
#include "sim/group_links.h"

#include <algorithm>

namespace dtsim {

namespace {

// Whether one of the device's NVLinks leads to a vertex that `to` accepts.
template <typename To>
bool nvlink_to(const Cluster& cluster, int rank, To to) {
  const Topology& t = cluster.topology;
  const auto [first, last] = boost::out_edges(cluster.devices[rank].vertex, t.graph());
  return std::any_of(first, last, [&](const auto& e) {
    const LinkInfo& l = t.link(t.graph()[e]);
    return l.kind == LinkKind::kNvLink && to(t.vertex(l.dst));
  });
}

// The device's NVLinks go to a switch (an NVSwitch node), not straight to its peers.
bool on_nvswitch(const Cluster& cluster, int rank) {
  return nvlink_to(cluster, rank,
                   [](const VertexInfo& v) { return v.kind == VertexKind::kSwitch; });
}

bool has_nvlink(const Cluster& cluster, int rank) {
  return nvlink_to(cluster, rank, [](const VertexInfo&) { return true; });
}

// NCCL's view: the search's channels (the communicator's are twice them), the oldest
// architecture, and whether a node's members meet over NVLink.
NcclGroup nccl_group(const Cluster& cluster, const std::vector<int>& members) {
  NcclGroup g;
  int channels = 0, newest = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const DeviceSpec& spec = *cluster.devices[members[i]].spec;
    const DeviceEfficiency& e = spec.efficiency;
    // A member without NCCL (a CPU, with MPI): no NCCL group.
    if (spec.kind != DeviceKind::kGpu || e.nccl_channels <= 0) return NcclGroup{};
    channels = i == 0 ? e.nccl_channels : std::min(channels, e.nccl_channels);
    g.compute_capability =
        i == 0 ? e.compute_capability : std::min(g.compute_capability, e.compute_capability);
    newest = std::max(newest, e.compute_capability);
  }
  if (members.empty()) return g;
  g.graph_channels = std::max(1, channels / 2);
  g.mixed_architectures = newest != g.compute_capability;
  g.nvlink =
      std::all_of(members.begin(), members.end(), [&](int r) { return has_nvlink(cluster, r); });
  return g;
}

}  // namespace

GroupLayout group_layout(const Cluster& cluster, const std::vector<int>& members) {
  GroupLayout layout;
  layout.members = members;
  for (int r : members) {
    layout.node_of.push_back(cluster.devices[r].node);
    layout.region_of.push_back(cluster.devices[r].region);
  }
  // NVLink SHARP: the third-generation NVSwitch of Hopper nodes and later.
  const auto in_one_node = [&](int r) {
    return cluster.devices[r].node == cluster.devices[members.front()].node &&
           cluster.devices[r].region == cluster.devices[members.front()].region;
  };
  layout.nic_per_member = std::all_of(members.begin(), members.end(), [&](int r) {
    const ClusterNode& node = cluster.nodes[static_cast<size_t>(cluster.devices[r].node)];
    return node.nics >= static_cast<int>(node.devices.size());
  });
  layout.nvlink_sharp =
      members.size() >= 2 && std::all_of(members.begin(), members.end(), [&](int r) {
        return in_one_node(r) && on_nvswitch(cluster, r) &&
               cluster.devices[r].spec->efficiency.compute_capability >= 90;
      });
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
  ab.nccl = nccl_group(cluster, m);
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
