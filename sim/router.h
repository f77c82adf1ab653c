// Least-cost routing with ECMP over the topology graph, cached per (src, dst) pair.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/pair_map.h"
#include "sim/topology.h"

namespace dtsim {

// Routes are least-cost paths (link cost from Topology: inversely proportional to
// bandwidth). Among equal-cost paths through the fabric, one is picked by hashing
// (src, dst), as flow-level ECMP hashing does in switches: every flow of a pair takes the
// same path, different pairs spread over the equal paths. Devices and hosts never forward
// traffic, and a route never passes through a third node (NICs and PCIe switches do not
// forward between fabrics for other nodes).
//
// A route has three parts, each searched (Dijkstra over the Boost.Graph adjacency) and
// cached on its own, so that the cost of routing grows with the number of pairs, not with
// pairs times the size of the fabric:
//   1. inside the source's node, from the source to each fabric switch its node touches
//      (cached per source);
//   2. across the fabric, among switches and gateways only, between two such switches
//      (an ECMP DAG cached per switch pair; a 16,384-GPU ring needs a few hundred);
//   3. inside the destination's node, from each fabric switch to the destination (cached
//      per destination).
// The route is the cheapest combination; inside a node the cheapest path is unique in
// every topology the builders make (ties are broken by link order).
class Router {
 public:
  // A cached route, valid for the router's lifetime (unlike a span into the cache).
  struct RouteRef {
    uint32_t begin = 0;
    uint32_t size = 0;
  };

  explicit Router(const Topology& topology);

  RouteRef route_ref(VertexId src, VertexId dst);
  // What the cache keeps per (src, dst) pair beside the route's links.
  static constexpr double route_entry_bytes() { return PairMap<RouteRef>::entry_bytes(); }
  std::span<const LinkId> links(RouteRef r) const { return {route_links_.data() + r.begin, r.size}; }
  // The links from src to dst, in order. Empty when src == dst. Aborts (internal error)
  // when dst is unreachable: cluster builders guarantee connectivity.
  std::span<const LinkId> route(VertexId src, VertexId dst);
  // Number of distinct least-cost paths between src and dst (for tests and reports).
  uint64_t count_equal_cost_paths(VertexId src, VertexId dst);
  Duration route_latency(VertexId src, VertexId dst);
  Bandwidth route_bottleneck(VertexId src, VertexId dst);

 private:
  // Node-local paths between an endpoint and the fabric switches its node touches.
  struct Local {
    struct Port {
      VertexId fabric;            // the switch just outside the node
      int64_t cost;               // endpoint <-> fabric, all links included
      std::vector<LinkId> links;  // in travel order (from the source / to the destination)
    };
    std::vector<Port> ports;
  };
  // Least-cost DAG between two fabric vertices: for each vertex on a least-cost path,
  // its incoming links on such paths.
  struct FabricDag {
    int64_t cost = 0;
    std::unordered_map<VertexId, std::vector<LinkId>> preds;
  };

  const Local& outbound(VertexId src);
  const Local& inbound(VertexId dst);
  const FabricDag& fabric_dag(VertexId from, VertexId to);
  // Dijkstra inside the endpoint's node, up to the fabric. With `target` set (outbound
  // only), also returns the cheapest path to that same-node vertex in `inside`.
  Local search_local(VertexId endpoint, bool outbound, VertexId target = UINT32_MAX,
                     std::pair<int64_t, std::vector<LinkId>>* inside = nullptr);
  FabricDag search_fabric(VertexId from, VertexId to);
  // The cheapest combinations of (outbound port, fabric DAG, inbound port), or the
  // inside path; fills `best` and returns the cost.
  struct Choice {
    const Local::Port* out = nullptr;
    const Local::Port* in = nullptr;
    const FabricDag* dag = nullptr;
    bool inside = false;
  };
  int64_t cheapest(VertexId src, VertexId dst, std::vector<Choice>& best);
  bool in_fabric(VertexId v) const { return topology_.vertex(v).node < 0; }

  const Topology& topology_;
  PairMap<RouteRef> cache_;
  std::vector<LinkId> route_links_;  // all cached routes, back to back
  std::unordered_map<VertexId, Local> outbound_, inbound_;
  std::unordered_map<uint64_t, FabricDag> fabric_;
  std::vector<LinkId> inside_path_;  // scratch: the same-node path of the current pair

  using Frontier = std::priority_queue<std::pair<int64_t, VertexId>,
                                      std::vector<std::pair<int64_t, VertexId>>, std::greater<>>;
  // Starts a search: a new epoch, `from` at distance 0 on the frontier.
  void begin_search(VertexId from, Frontier& frontier);
  // Makes v's scratch entry belong to the current search (unvisited, infinitely far).
  void touch(VertexId v);

  // Per-search scratch, valid where stamp_[v] == epoch_.
  uint32_t epoch_ = 0;
  std::vector<uint32_t> stamp_;
  std::vector<int64_t> dist_;
  std::vector<bool> settled_;
  std::vector<std::vector<LinkId>> preds_;
};

}  // namespace dtsim
