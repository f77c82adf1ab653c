// Shortest-path routing with ECMP over the topology graph, cached per (src, dst) pair.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/topology.h"

namespace dtsim {

// Routes are least-cost paths (link cost from Topology: inversely proportional to
// bandwidth). Among equal-cost paths, one is picked by hashing (src, dst), as flow-level
// ECMP hashing does in switches: every flow of a pair takes the same path, different pairs
// spread over the equal paths. Devices and hosts never forward traffic.
//
// The search is Dijkstra over the Boost.Graph adjacency with an early exit at the
// destination and scratch arrays stamped per search, so a route costs what it explores,
// not the size of the graph (neighbours in a 16,384-GPU fabric are a few hops apart).
class Router {
 public:
  // A cached route, valid for the router's lifetime (unlike a span into the cache).
  struct RouteRef {
    uint32_t begin = 0;
    uint32_t size = 0;
  };

  explicit Router(const Topology& topology);

  RouteRef route_ref(VertexId src, VertexId dst);
  std::span<const LinkId> links(RouteRef r) const { return {route_links_.data() + r.begin, r.size}; }

  // The links from src to dst, in order. Empty when src == dst. Aborts (internal error)
  // when dst is unreachable: cluster builders guarantee connectivity.
  std::span<const LinkId> route(VertexId src, VertexId dst);
  // Number of distinct least-cost paths between src and dst (for tests and reports).
  uint64_t count_equal_cost_paths(VertexId src, VertexId dst);
  Duration route_latency(VertexId src, VertexId dst);
  Bandwidth route_bottleneck(VertexId src, VertexId dst);
  size_t cached_routes() const { return cache_.size(); }

 private:
  // Runs the search from src until dst is settled; fills dist_/preds_ for the explored part.
  void search(VertexId src, VertexId dst);
  bool fresh(VertexId v) const { return stamp_[v] == epoch_; }

  const Topology& topology_;
  std::unordered_map<uint64_t, RouteRef> cache_;
  std::vector<LinkId> route_links_;  // all cached routes, back to back

  // Per-search scratch, valid where stamp_[v] == epoch_.
  uint32_t epoch_ = 0;
  std::vector<uint32_t> stamp_;
  std::vector<int64_t> dist_;
  std::vector<bool> settled_;
  std::vector<std::vector<LinkId>> preds_;  // incoming links on least-cost paths
};

}  // namespace dtsim
