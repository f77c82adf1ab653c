// Cluster topology: a Boost.Graph of devices, hosts, NICs, switches and region gateways
// joined by directed links (a full-duplex cable is two links, one per direction).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "sim/device.h"
#include "sim/units.h"

namespace dtsim {

using VertexId = uint32_t;
using LinkId = uint32_t;

enum class VertexKind { kDevice, kHost, kNic, kSwitch, kGateway };
enum class LinkKind { kNvLink, kPcie, kHostMemory, kNetwork, kWan };
std::string_view vertex_kind_name(VertexKind k);
std::string_view link_kind_name(LinkKind k);

struct VertexInfo {
  std::string name;
  VertexKind kind = VertexKind::kSwitch;
  int region = 0;
  int node = -1;  // -1 for fabric elements that belong to no node
};

struct LinkInfo {
  VertexId src = 0;
  VertexId dst = 0;
  Bandwidth bandwidth;
  Duration latency;
  LinkKind kind = LinkKind::kNetwork;
  // Routing cost, OSPF-style: inversely proportional to bandwidth, so that routes prefer
  // fast links (NVLink over PCIe inside a node) and equal-cost paths are exactly equal.
  int64_t cost = 1;
};

class Topology {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                      boost::no_property, LinkId>;

  VertexId add_vertex(VertexInfo info);
  // Adds a full-duplex connection: two links with the same bandwidth (per direction) and
  // latency. Returns the id of the a->b link; b->a is the next id.
  LinkId connect(VertexId a, VertexId b, Bandwidth bw, Duration latency, LinkKind kind);

  size_t num_vertices() const { return vertices_.size(); }
  size_t num_links() const { return links_.size(); }
  const VertexInfo& vertex(VertexId v) const { return vertices_[v]; }
  const LinkInfo& link(LinkId l) const { return links_[l]; }
  std::string link_name(LinkId l) const;
  const Graph& graph() const { return *graph_; }
  // Devices and hosts terminate traffic; they never forward it for others.
  bool is_transit(VertexId v) const {
    return vertices_[v].kind != VertexKind::kDevice && vertices_[v].kind != VertexKind::kHost;
  }

 private:
  // Behind a pointer so that a Topology (and a Cluster, a Scenario) moves without copying
  // the graph: Boost 1.74's adjacency_list has no move constructor.
  std::unique_ptr<Graph> graph_ = std::make_unique<Graph>();
  std::vector<VertexInfo> vertices_;
  std::vector<LinkInfo> links_;
};

// One accelerator (or CPU socket) that runs one rank.
struct ClusterDevice {
  VertexId vertex = 0;
  const DeviceSpec* spec = nullptr;
  int node = 0;
  int local_index = 0;  // index inside its node
  int region = 0;
  // Of the device's catalog figures: its unit's draw (DeviceEfficiency::speed_variation)
  // times its node group's compute_share.
  double speed = 1;
};

struct ClusterNode {
  std::string name;
  int region = 0;
  std::vector<int> devices;  // ranks, in local order
  VertexId host = 0;
  int nics = 0;  // network interfaces (rails)
};

struct ClusterRegion {
  std::string name;
  std::vector<int> nodes;
  VertexId gateway = 0;  // only meaningful when the cluster has several regions
};

// A built cluster: the graph plus the device/node/region index over it. Rank r is
// devices[r]. Device specs are owned by the cluster so that custom devices live as long.
struct Cluster {
  Topology topology;
  std::vector<ClusterDevice> devices;
  std::vector<ClusterNode> nodes;
  std::vector<ClusterRegion> regions;
  std::vector<std::unique_ptr<DeviceSpec>> owned_specs;

  int num_ranks() const { return static_cast<int>(devices.size()); }
};

}  // namespace dtsim
