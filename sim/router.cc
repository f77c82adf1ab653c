// ECMP Dijkstra with early exit; predecessor DAG walked back from dst with a pair hash.
#include "sim/router.h"

#include <algorithm>
#include <queue>

#include "sim/check.h"

namespace dtsim {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser: a stable, well-spread pair hash
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t pair_key(VertexId src, VertexId dst) {
  return (static_cast<uint64_t>(src) << 32) | dst;
}

}  // namespace

Router::Router(const Topology& topology)
    : topology_(topology),
      stamp_(topology.num_vertices(), 0),
      dist_(topology.num_vertices(), 0),
      settled_(topology.num_vertices(), false),
      preds_(topology.num_vertices()) {}

void Router::search(VertexId src, VertexId dst) {
  ++epoch_;
  using Entry = std::pair<int64_t, VertexId>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> frontier;
  auto touch = [&](VertexId v) {
    if (!fresh(v)) {
      stamp_[v] = epoch_;
      dist_[v] = INT64_MAX;
      settled_[v] = false;
      preds_[v].clear();
    }
  };
  touch(src);
  dist_[src] = 0;
  frontier.emplace(0, src);
  const auto& g = topology_.graph();
  const int src_node = topology_.vertex(src).node;
  const int dst_node = topology_.vertex(dst).node;
  // A route may leave only the source's node and enter only the destination's: NICs and
  // PCIe switches do not forward traffic between fabrics for other nodes.
  auto may_cross = [&](const VertexInfo& from, const VertexInfo& to) {
    if (from.node == to.node) return true;
    return (from.node == -1 || from.node == src_node) && (to.node == -1 || to.node == dst_node);
  };
  while (!frontier.empty()) {
    auto [d, u] = frontier.top();
    frontier.pop();
    if (settled_[u]) continue;
    settled_[u] = true;
    // Every predecessor of dst is closer than dst, hence settled before it: dst's
    // equal-cost predecessor set is complete here.
    if (u == dst) return;
    if (u != src && !topology_.is_transit(u)) continue;
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      const LinkId l = g[*e];
      const LinkInfo& info = topology_.link(l);
      const VertexId v = info.dst;
      if (!may_cross(topology_.vertex(u), topology_.vertex(v))) continue;
      touch(v);
      if (settled_[v]) continue;
      const int64_t nd = d + info.cost;
      if (nd < dist_[v]) {
        dist_[v] = nd;
        preds_[v].assign(1, l);
        frontier.emplace(nd, v);
      } else if (nd == dist_[v]) {
        preds_[v].push_back(l);
      }
    }
  }
  DTSIM_CHECK(false, "destination unreachable: the cluster builder left the graph disconnected");
}

std::span<const LinkId> Router::route(VertexId src, VertexId dst) {
  return links(route_ref(src, dst));
}

Router::RouteRef Router::route_ref(VertexId src, VertexId dst) {
  if (src == dst) return {};
  const uint64_t key = pair_key(src, dst);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  search(src, dst);
  // Walk back from dst; at each vertex with several equal-cost predecessors, pick one by a
  // hash of the pair and the hop, so the choice is deterministic and well spread.
  std::vector<LinkId> reversed;
  VertexId v = dst;
  uint64_t h = mix(key);
  while (v != src) {
    const auto& preds = preds_[v];
    DTSIM_CHECK(!preds.empty(), "broken predecessor chain");
    const LinkId l = preds.size() == 1 ? preds[0] : preds[h % preds.size()];
    h = mix(h);
    reversed.push_back(l);
    v = topology_.link(l).src;
  }
  const auto begin = static_cast<uint32_t>(route_links_.size());
  route_links_.insert(route_links_.end(), reversed.rbegin(), reversed.rend());
  const RouteRef ref{begin, static_cast<uint32_t>(reversed.size())};
  cache_.emplace(key, ref);
  return ref;
}

uint64_t Router::count_equal_cost_paths(VertexId src, VertexId dst) {
  if (src == dst) return 1;
  search(src, dst);
  // Paths into each settled vertex, in order of distance (a DAG).
  std::vector<VertexId> order;
  for (VertexId v = 0; v < topology_.num_vertices(); ++v) {
    if (fresh(v) && settled_[v]) order.push_back(v);
  }
  std::sort(order.begin(), order.end(), [&](VertexId a, VertexId b) { return dist_[a] < dist_[b]; });
  std::unordered_map<VertexId, uint64_t> paths{{src, 1}};
  for (VertexId v : order) {
    if (v == src) continue;
    uint64_t n = 0;
    for (LinkId l : preds_[v]) n += paths[topology_.link(l).src];
    paths[v] = n;
  }
  return paths[dst];
}

Duration Router::route_latency(VertexId src, VertexId dst) {
  Duration total;
  for (LinkId l : route(src, dst)) total += topology_.link(l).latency;
  return total;
}

Bandwidth Router::route_bottleneck(VertexId src, VertexId dst) {
  double bw = 1e300;
  for (LinkId l : route(src, dst)) bw = std::min(bw, topology_.link(l).bandwidth.bytes_per_second());
  return Bandwidth::bytes_per_s(bw);
}

}  // namespace dtsim
