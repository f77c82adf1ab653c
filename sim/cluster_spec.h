// Typed, validated description of a cluster: node groups, the fabric that joins them,
// regions and the WAN links between regions. The loader builds it; build_cluster turns it
// into a Cluster (graph + rank index).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/device.h"
#include "sim/topology.h"
#include "sim/units.h"

namespace dtsim {

// How the devices inside one node talk to each other.
enum class IntraNodeKind {
  kNvSwitch,    // every device has one link (all its NVLinks) to a shared NVSwitch
  kNvLinkMesh,  // a direct link between every pair of devices, NVLink split evenly
  kPcie,        // no NVLink: device-to-device traffic goes through PCIe switches
};
std::string_view intra_node_kind_name(IntraNodeKind k);

struct NodeGroupSpec {
  int count = 1;  // nodes in this group
  const DeviceSpec* device = nullptr;
  int devices_per_node = 1;
  IntraNodeKind intra = IntraNodeKind::kNvSwitch;
  Bandwidth intra_bandwidth;  // per device per direction (NVLink); from the device by default
  Duration intra_latency = Duration::ns(500);
  Bandwidth pcie_bandwidth;  // per PCIe link per direction; from the device by default
  Duration pcie_latency = Duration::ns(500);
  // Line rate x efficiency is what the links carry (DeviceEfficiency::nvlink_efficiency
  // and pcie_efficiency; the loader copies the device's).
  double intra_efficiency = 1.0;
  double pcie_efficiency = 1.0;
  double speed_variation = 0;  // DeviceEfficiency::speed_variation; the loader copies it
  // The share of its devices' compute that the group's ranks get, in (0, 1]: a device
  // partitioned or throttled (a CPU quota) runs every kernel 1/share as long. A real run
  // emulates it with a CPU quota per rank (runner/cpu_quota.h).
  double compute_share = 1;
  int nics = 1;  // NIC i serves devices [i*d/nics, (i+1)*d/nics): one rail per NIC
  Bandwidth nic_bandwidth = Bandwidth::gbps(100);
  Duration nic_latency = Duration::ns(1000);
  Bandwidth host_bandwidth = Bandwidth::gb_per_s(100);  // host memory behind the root complex
};

enum class FabricKind {
  kNone,           // a single node, nothing outside it
  kSingleSwitch,   // every NIC on one switch (full bisection)
  kFatTree,        // leaf/spine: all NICs of `nodes_per_leaf` nodes on one leaf
  kRailOptimized,  // leaf/spine: NIC r of each node of a group on that group's leaf r
  kThinTree,       // full-bandwidth groups under one core via narrower uplinks
  kTorus,          // 2D/3D torus of per-node routers (direct network)
};
std::string_view fabric_kind_name(FabricKind k);

struct FabricSpec {
  FabricKind kind = FabricKind::kNone;
  Duration link_latency = Duration::ns(1000);  // per switch-to-switch hop
  // Fat tree / rail-optimized: uplink capacity of a leaf = downlink capacity / ratio.
  double oversubscription = 1.0;
  int nodes_per_leaf = 16;   // fat tree
  int nodes_per_group = 16;  // rail-optimized and thin tree
  int spines = 0;            // fat tree / rail-optimized; 0 = as many as the busiest leaf needs
  Bandwidth group_uplink;    // thin tree: bandwidth from each group switch to the core
  std::vector<int> torus_dims;  // torus: node grid, product = nodes in the region
  Bandwidth torus_link_bandwidth;  // torus: per neighbour link; NIC bandwidth by default
};

struct RegionSpec {
  std::string name;
  std::vector<NodeGroupSpec> node_groups;
  FabricSpec fabric;
  Bandwidth gateway_bandwidth;  // region's top switches to its WAN gateway, in total
};

struct WanLinkSpec {
  std::string a;
  std::string b;
  Bandwidth bandwidth;
  Duration latency;
};

struct ClusterSpec {
  std::vector<RegionSpec> regions;  // one region when the scenario declares none
  std::vector<WanLinkSpec> wan;
  uint64_t speed_seed = 1;  // draws each device's speed; the same seed, the same cluster
};

// Builds the graph and rank index. Ranks are numbered region by region, node by node,
// device by device. Input must be validated (the loader does): violated assumptions here
// are internal errors.
Cluster build_cluster(const ClusterSpec& spec);

}  // namespace dtsim
