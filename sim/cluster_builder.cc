// Builds a Cluster from a ClusterSpec: nodes (PCIe tree, NVSwitch or NVLink mesh, NICs),
// then each region's fabric, then region gateways joined by WAN links.
#include <algorithm>
#include <string>

#include "sim/check.h"
#include "sim/cluster_spec.h"
#include "sim/fabric_builder.h"

namespace dtsim {

std::string_view intra_node_kind_name(IntraNodeKind k) {
  switch (k) {
    case IntraNodeKind::kNvSwitch: return "nvswitch";
    case IntraNodeKind::kNvLinkMesh: return "nvlink_mesh";
    case IntraNodeKind::kPcie: return "pcie";
  }
  return "?";
}

namespace {

// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): a well-mixed 64-bit value per (seed,
// device), so a device's speed does not depend on how many draws came before it.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double unit_speed(uint64_t seed, size_t device, double variation) {
  if (variation <= 0) return 1;
  const uint64_t bits = splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(device));
  const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;  // uniform in [0, 1)
  return 1 + variation * (u - 0.5);
}

// One node: host memory behind a root complex, one PCIe switch per NIC (each NIC and its
// devices share it, as in DGX-style boards), NVLink between devices when the kind has it.
FabricNode build_node(Cluster& c, const NodeGroupSpec& g, const std::string& name, int region,
                      uint64_t speed_seed) {
  Topology& t = c.topology;
  const int node_index = static_cast<int>(c.nodes.size());
  ClusterNode node;
  node.name = name;
  node.region = region;
  auto vertex = [&](const std::string& suffix, VertexKind kind) {
    return t.add_vertex(VertexInfo{name + "." + suffix, kind, region, node_index});
  };
  node.host = vertex("host", VertexKind::kHost);
  const VertexId root_complex = vertex("rc", VertexKind::kSwitch);
  t.connect(node.host, root_complex, g.host_bandwidth, Duration::zero(), LinkKind::kHostMemory);

  const Bandwidth pcie_rate = g.pcie_bandwidth * g.pcie_efficiency;
  const Bandwidth nvlink_rate = g.intra_bandwidth * g.intra_efficiency;
  const int pcie_switches = std::max(1, g.nics);
  std::vector<VertexId> pcie;
  for (int s = 0; s < pcie_switches; ++s) {
    pcie.push_back(vertex("pcie" + std::to_string(s), VertexKind::kSwitch));
    t.connect(pcie.back(), root_complex, pcie_rate, g.pcie_latency, LinkKind::kPcie);
  }
  std::vector<VertexId> devices;
  for (int d = 0; d < g.devices_per_node; ++d) {
    const std::string kind = g.device->kind == DeviceKind::kGpu ? "gpu" : "cpu";
    const VertexId v = vertex(kind + std::to_string(d), VertexKind::kDevice);
    devices.push_back(v);
    t.connect(v, pcie[d * pcie_switches / g.devices_per_node], pcie_rate, g.pcie_latency,
              LinkKind::kPcie);
    node.devices.push_back(static_cast<int>(c.devices.size()));
    c.devices.push_back(ClusterDevice{
        v, g.device, node_index, d, region,
        unit_speed(speed_seed, c.devices.size(), g.speed_variation) * g.compute_share});
  }
  if (g.devices_per_node > 1 && g.intra == IntraNodeKind::kNvSwitch) {
    const VertexId nvswitch = vertex("nvswitch", VertexKind::kSwitch);
    for (VertexId d : devices) t.connect(d, nvswitch, nvlink_rate, g.intra_latency, LinkKind::kNvLink);
  } else if (g.devices_per_node > 1 && g.intra == IntraNodeKind::kNvLinkMesh) {
    const Bandwidth per_pair = nvlink_rate / (g.devices_per_node - 1);
    for (size_t a = 0; a < devices.size(); ++a) {
      for (size_t b = a + 1; b < devices.size(); ++b) {
        t.connect(devices[a], devices[b], per_pair, g.intra_latency, LinkKind::kNvLink);
      }
    }
  }
  FabricNode out;
  for (int n = 0; n < g.nics; ++n) {
    const VertexId nic = vertex("nic" + std::to_string(n), VertexKind::kNic);
    t.connect(nic, pcie[n], pcie_rate, g.pcie_latency, LinkKind::kPcie);
    out.nics.push_back(nic);
  }
  out.nic_bandwidth = g.nic_bandwidth;
  out.nic_latency = g.nic_latency;
  node.nics = g.nics;
  c.nodes.push_back(std::move(node));
  return out;
}

}  // namespace

Cluster build_cluster(const ClusterSpec& spec) {
  DTSIM_CHECK(!spec.regions.empty(), "a cluster needs at least one region");
  Cluster c;
  const bool multi_region = spec.regions.size() > 1;
  std::vector<std::vector<VertexId>> region_tops;
  for (size_t r = 0; r < spec.regions.size(); ++r) {
    const RegionSpec& region = spec.regions[r];
    const int region_index = static_cast<int>(r);
    ClusterRegion out{region.name, {}, 0};
    const std::string prefix = multi_region ? region.name + "." : "";
    std::vector<FabricNode> fabric_nodes;
    int node_in_region = 0;
    for (const NodeGroupSpec& g : region.node_groups) {
      for (int i = 0; i < g.count; ++i) {
        out.nodes.push_back(static_cast<int>(c.nodes.size()));
        fabric_nodes.push_back(
            build_node(c, g, prefix + "n" + std::to_string(node_in_region++), region_index,
                       spec.speed_seed));
      }
    }
    region_tops.push_back(
        build_fabric(c.topology, region.fabric, fabric_nodes, prefix, region_index));
    c.regions.push_back(std::move(out));
  }
  if (multi_region) {
    for (size_t r = 0; r < spec.regions.size(); ++r) {
      const RegionSpec& region = spec.regions[r];
      const VertexId gw = c.topology.add_vertex(
          VertexInfo{region.name + ".gateway", VertexKind::kGateway, static_cast<int>(r), -1});
      c.regions[r].gateway = gw;
      const auto& tops = region_tops[r];
      DTSIM_CHECK(!tops.empty(), "a region needs a top switch to reach its gateway");
      const Bandwidth share = region.gateway_bandwidth / static_cast<double>(tops.size());
      for (VertexId top : tops) {
        c.topology.connect(top, gw, share, region.fabric.link_latency, LinkKind::kNetwork);
      }
    }
    auto region_index = [&](const std::string& name) {
      for (size_t r = 0; r < c.regions.size(); ++r) {
        if (c.regions[r].name == name) return static_cast<int>(r);
      }
      DTSIM_CHECK(false, "WAN link names an unknown region");
      return -1;
    };
    for (const WanLinkSpec& w : spec.wan) {
      c.topology.connect(c.regions[region_index(w.a)].gateway, c.regions[region_index(w.b)].gateway,
                         w.bandwidth, w.latency, LinkKind::kWan);
    }
  }
  return c;
}

}  // namespace dtsim
