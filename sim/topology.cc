// Topology construction and naming.
#include "sim/topology.h"

#include <algorithm>
#include <cmath>

#include "sim/check.h"

namespace dtsim {

std::string_view vertex_kind_name(VertexKind k) {
  switch (k) {
    case VertexKind::kDevice: return "device";
    case VertexKind::kHost: return "host";
    case VertexKind::kNic: return "nic";
    case VertexKind::kSwitch: return "switch";
    case VertexKind::kGateway: return "gateway";
  }
  return "?";
}

std::string_view link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::kNvLink: return "nvlink";
    case LinkKind::kPcie: return "pcie";
    case LinkKind::kHostMemory: return "host_memory";
    case LinkKind::kNetwork: return "network";
    case LinkKind::kWan: return "wan";
  }
  return "?";
}

VertexId Topology::add_vertex(VertexInfo info) {
  const auto v = static_cast<VertexId>(boost::add_vertex(*graph_));
  DTSIM_CHECK(v == vertices_.size(), "vertex ids must be dense");
  vertices_.push_back(std::move(info));
  return v;
}

LinkId Topology::connect(VertexId a, VertexId b, Bandwidth bw, Duration latency, LinkKind kind) {
  DTSIM_CHECK(a < vertices_.size() && b < vertices_.size() && a != b, "bad link endpoints");
  DTSIM_CHECK(bw.bytes_per_second() > 0, "link bandwidth must be positive");
  // 1 TB/s costs 1; 50 GB/s (400 Gbps) costs 20; 1.25 GB/s (10 Gbps) costs 800.
  // Clamped so that absurdly slow links cannot overflow the cost (or sums of costs).
  const auto cost = static_cast<int64_t>(std::clamp(std::round(1e12 / bw.bytes_per_second()), 1.0, 1e15));
  const auto first = static_cast<LinkId>(links_.size());
  for (auto [s, d] : {std::pair{a, b}, std::pair{b, a}}) {
    const auto id = static_cast<LinkId>(links_.size());
    links_.push_back(LinkInfo{s, d, bw, latency, kind, cost});
    boost::add_edge(s, d, id, *graph_);
  }
  return first;
}

std::string Topology::link_name(LinkId l) const {
  return vertices_[links_[l].src].name + "->" + vertices_[links_[l].dst].name;
}

}  // namespace dtsim
