// Fabric topologies: single switch, fat tree, rail-optimized, thin tree, 2D/3D torus.
#include "sim/fabric_builder.h"

#include <algorithm>
#include <numeric>

#include "sim/check.h"

namespace dtsim {

std::string_view fabric_kind_name(FabricKind k) {
  switch (k) {
    case FabricKind::kNone: return "none";
    case FabricKind::kSingleSwitch: return "single_switch";
    case FabricKind::kFatTree: return "fat_tree";
    case FabricKind::kRailOptimized: return "rail_optimized";
    case FabricKind::kThinTree: return "thin_tree";
    case FabricKind::kTorus: return "torus";
  }
  return "?";
}

namespace {

struct Builder {
  Topology& t;
  const FabricSpec& spec;
  const std::vector<FabricNode>& nodes;
  const std::string& prefix;
  int region;

  VertexId add_switch(const std::string& name) {
    return t.add_vertex(VertexInfo{prefix + name, VertexKind::kSwitch, region, -1});
  }
  void attach_nic(const FabricNode& n, VertexId nic, VertexId sw) {
    t.connect(nic, sw, n.nic_bandwidth, n.nic_latency, LinkKind::kNetwork);
  }
  size_t max_nics() const {
    size_t m = 1;
    for (const auto& n : nodes) m = std::max(m, n.nics.size());
    return m;
  }

  // Joins leaves to spines. Each leaf's uplinks together carry its downlink capacity
  // divided by the oversubscription ratio, spread evenly over the spines.
  std::vector<VertexId> add_spines(const std::vector<VertexId>& leaves,
                                   const std::vector<double>& leaf_down_bytes_per_s) {
    const int spines = spec.spines > 0 ? spec.spines : static_cast<int>(max_nics());
    std::vector<VertexId> out;
    for (int s = 0; s < spines; ++s) out.push_back(add_switch("spine" + std::to_string(s)));
    for (size_t l = 0; l < leaves.size(); ++l) {
      // A rail that no node of the group uses has an empty leaf: nothing to carry up.
      if (leaf_down_bytes_per_s[l] <= 0) continue;
      const double up = leaf_down_bytes_per_s[l] / spec.oversubscription / spines;
      for (VertexId s : out) {
        t.connect(leaves[l], s, Bandwidth::bytes_per_s(up), spec.link_latency, LinkKind::kNetwork);
      }
    }
    return out;
  }

  std::vector<VertexId> single_switch() {
    const VertexId sw = add_switch("switch");
    for (const auto& n : nodes) {
      for (VertexId nic : n.nics) attach_nic(n, nic, sw);
    }
    return {sw};
  }

  std::vector<VertexId> fat_tree() {
    const size_t per_leaf = static_cast<size_t>(spec.nodes_per_leaf);
    std::vector<VertexId> leaves;
    std::vector<double> down;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i % per_leaf == 0) {
        leaves.push_back(add_switch("leaf" + std::to_string(leaves.size())));
        down.push_back(0);
      }
      for (VertexId nic : nodes[i].nics) {
        attach_nic(nodes[i], nic, leaves.back());
        down.back() += nodes[i].nic_bandwidth.bytes_per_second();
      }
    }
    if (leaves.size() == 1) return leaves;
    return add_spines(leaves, down);
  }

  std::vector<VertexId> rail_optimized() {
    const size_t per_group = static_cast<size_t>(spec.nodes_per_group);
    const size_t rails = max_nics();
    std::vector<VertexId> leaves;
    std::vector<double> down;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const size_t group = i / per_group;
      if (i % per_group == 0) {
        for (size_t r = 0; r < rails; ++r) {
          leaves.push_back(add_switch("g" + std::to_string(group) + ".rail" + std::to_string(r)));
          down.push_back(0);
        }
      }
      for (size_t r = 0; r < nodes[i].nics.size(); ++r) {
        const size_t leaf = group * rails + r;
        attach_nic(nodes[i], nodes[i].nics[r], leaves[leaf]);
        down[leaf] += nodes[i].nic_bandwidth.bytes_per_second();
      }
    }
    if (leaves.size() == 1) return leaves;
    return add_spines(leaves, down);
  }

  std::vector<VertexId> thin_tree() {
    const size_t per_group = static_cast<size_t>(spec.nodes_per_group);
    std::vector<VertexId> groups;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i % per_group == 0) groups.push_back(add_switch("group" + std::to_string(groups.size())));
      for (VertexId nic : nodes[i].nics) attach_nic(nodes[i], nic, groups.back());
    }
    if (groups.size() == 1) return groups;
    const VertexId core = add_switch("core");
    for (VertexId g : groups) t.connect(g, core, spec.group_uplink, spec.link_latency, LinkKind::kNetwork);
    return {core};
  }

  // Node i sits at mixed-radix coordinates of i over the dims; each router links to its
  // +1 neighbour in every dimension (with wrap-around), which covers the -1 side too.
  std::vector<VertexId> torus() {
    const auto& dims = spec.torus_dims;
    DTSIM_CHECK(std::accumulate(dims.begin(), dims.end(), size_t{1}, std::multiplies<>()) ==
                    nodes.size(), "torus dims must multiply to the node count");
    std::vector<VertexId> routers;
    for (size_t i = 0; i < nodes.size(); ++i) {
      routers.push_back(add_switch("router" + std::to_string(i)));
      for (VertexId nic : nodes[i].nics) attach_nic(nodes[i], nic, routers.back());
    }
    size_t stride = 1;
    for (int dim : dims) {
      const size_t d = static_cast<size_t>(dim);
      for (size_t i = 0; i < nodes.size(); ++i) {
        const size_t coord = (i / stride) % d;
        if (d < 2 || (d == 2 && coord == 1)) continue;  // size 2: one cable, not two
        const size_t next = i - coord * stride + ((coord + 1) % d) * stride;
        const Bandwidth bw = spec.torus_link_bandwidth.bytes_per_second() > 0
                                 ? spec.torus_link_bandwidth
                                 : nodes[i].nic_bandwidth * static_cast<double>(nodes[i].nics.size());
        t.connect(routers[i], routers[next], bw, spec.link_latency, LinkKind::kNetwork);
      }
      stride *= d;
    }
    // Up to 8 evenly spaced routers reach the region's gateway, so that inter-region
    // traffic does not all converge on one router.
    std::vector<VertexId> tops;
    const size_t k = std::min<size_t>(8, routers.size());
    for (size_t i = 0; i < k; ++i) tops.push_back(routers[i * routers.size() / k]);
    return tops;
  }
};

}  // namespace

std::vector<VertexId> build_fabric(Topology& t, const FabricSpec& spec,
                                   const std::vector<FabricNode>& nodes, const std::string& prefix,
                                   int region) {
  Builder b{t, spec, nodes, prefix, region};
  switch (spec.kind) {
    case FabricKind::kNone: {
      DTSIM_CHECK(nodes.size() == 1, "fabric none holds exactly one node");
      return nodes.front().nics;
    }
    case FabricKind::kSingleSwitch: return b.single_switch();
    case FabricKind::kFatTree: return b.fat_tree();
    case FabricKind::kRailOptimized: return b.rail_optimized();
    case FabricKind::kThinTree: return b.thin_tree();
    case FabricKind::kTorus: return b.torus();
  }
  return {};
}

}  // namespace dtsim
