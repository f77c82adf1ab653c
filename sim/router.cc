// Three-part routing: node-local Dijkstra at each end, fabric-only ECMP DAGs in between.
#include "sim/router.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "sim/check.h"

namespace dtsim {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser: a stable, well-spread hash
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Topology::connect adds a->b and b->a as consecutive ids starting at an even id.
LinkId reverse(LinkId l) { return l ^ 1U; }

}  // namespace

void Router::touch(VertexId v) {
  if (stamp_[v] != epoch_) {
    stamp_[v] = epoch_;
    dist_[v] = INT64_MAX;
    settled_[v] = false;
    preds_[v].clear();
  }
}

void Router::begin_search(VertexId from, Frontier& frontier) {
  ++epoch_;
  touch(from);
  dist_[from] = 0;
  frontier.emplace(0, from);
}

Router::Router(const Topology& topology)
    : topology_(topology),
      stamp_(topology.num_vertices(), 0),
      dist_(topology.num_vertices(), 0),
      settled_(topology.num_vertices(), false),
      preds_(topology.num_vertices()) {}

// Dijkstra inside the endpoint's node. Outbound: paths from the endpoint; inbound: paths
// to it (over reversed links). Fabric vertices end a path; devices and hosts other than the
// endpoint are destinations, never transit.
Router::Local Router::search_local(VertexId endpoint, bool outbound, VertexId target,
                                   std::pair<int64_t, std::vector<LinkId>>* inside) {
  Local out;
  const int node = topology_.vertex(endpoint).node;
  if (node < 0) {
    out.ports.push_back({endpoint, 0, {}});
    return out;
  }
  Frontier frontier;
  begin_search(endpoint, frontier);
  std::vector<VertexId> fabric_reached;
  const auto& g = topology_.graph();
  while (!frontier.empty()) {
    const auto [d, u] = frontier.top();
    frontier.pop();
    if (settled_[u]) continue;
    settled_[u] = true;
    if (topology_.vertex(u).node != node) continue;  // a fabric vertex: the path ends here
    if (u != endpoint && !topology_.is_transit(u)) continue;
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      // Outbound we travel the edge u->v; inbound we travel v->u, its reverse.
      const LinkId l = outbound ? g[*e] : reverse(g[*e]);
      const VertexId v = outbound ? topology_.link(l).dst : topology_.link(l).src;
      const int v_node = topology_.vertex(v).node;
      if (v_node != node && v_node >= 0) continue;  // never into a third node
      touch(v);
      const int64_t nd = d + topology_.link(l).cost;
      if (nd < dist_[v]) {
        if (dist_[v] == INT64_MAX && v_node < 0) fabric_reached.push_back(v);
        dist_[v] = nd;
        preds_[v].assign(1, l);
        frontier.emplace(nd, v);
      }
    }
  }
  // The link that reaches v on its cheapest path; walking these gives the path.
  auto path_to = [&](VertexId v) {
    std::vector<LinkId> links;
    while (v != endpoint) {
      const LinkId l = preds_[v].front();
      links.push_back(l);
      v = outbound ? topology_.link(l).src : topology_.link(l).dst;
    }
    if (outbound) std::reverse(links.begin(), links.end());
    return links;
  };
  for (VertexId f : fabric_reached) out.ports.push_back({f, dist_[f], path_to(f)});
  std::sort(out.ports.begin(), out.ports.end(),
            [](const Local::Port& a, const Local::Port& b) { return a.cost < b.cost; });
  if (inside && stamp_[target] == epoch_ && dist_[target] != INT64_MAX) {
    *inside = {dist_[target], path_to(target)};
  }
  return out;
}

const Router::Local& Router::outbound(VertexId src) {
  auto it = outbound_.find(src);
  if (it == outbound_.end()) it = outbound_.emplace(src, search_local(src, true)).first;
  return it->second;
}

const Router::Local& Router::inbound(VertexId dst) {
  auto it = inbound_.find(dst);
  if (it == inbound_.end()) it = inbound_.emplace(dst, search_local(dst, false)).first;
  return it->second;
}

// Dijkstra among fabric vertices from `from`, stopping once `to` is settled (all its
// equal-cost predecessors are closer, hence settled before it); then keeps the part of the
// predecessor graph that lies on least-cost paths to `to`.
Router::FabricDag Router::search_fabric(VertexId from, VertexId to) {
  FabricDag dag;
  if (from == to) return dag;
  Frontier frontier;
  begin_search(from, frontier);
  const auto& g = topology_.graph();
  while (!frontier.empty()) {
    const auto [d, u] = frontier.top();
    frontier.pop();
    if (settled_[u]) continue;
    settled_[u] = true;
    if (u == to) break;
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      const LinkId l = g[*e];
      const VertexId v = topology_.link(l).dst;
      if (!in_fabric(v)) continue;
      touch(v);
      if (settled_[v]) continue;
      const int64_t nd = d + topology_.link(l).cost;
      if (nd < dist_[v]) {
        dist_[v] = nd;
        preds_[v].assign(1, l);
        frontier.emplace(nd, v);
      } else if (nd == dist_[v]) {
        preds_[v].push_back(l);
      }
    }
  }
  if (stamp_[to] != epoch_ || !settled_[to]) {
    dag.cost = INT64_MAX;  // the fabric does not join these two switches
    return dag;
  }
  dag.cost = dist_[to];
  std::vector<VertexId> stack{to};
  while (!stack.empty()) {
    const VertexId v = stack.back();
    stack.pop_back();
    if (v == from || dag.preds.count(v)) continue;
    dag.preds.emplace(v, preds_[v]);
    for (LinkId l : preds_[v]) stack.push_back(topology_.link(l).src);
  }
  return dag;
}

const Router::FabricDag& Router::fabric_dag(VertexId from, VertexId to) {
  const uint64_t key = PairMap<RouteRef>::key(from, to);
  auto it = fabric_.find(key);
  if (it == fabric_.end()) it = fabric_.emplace(key, search_fabric(from, to)).first;
  return it->second;
}

int64_t Router::cheapest(VertexId src, VertexId dst, std::vector<Choice>& best) {
  best.clear();
  int64_t best_cost = INT64_MAX;
  auto offer = [&](int64_t cost, Choice c) {
    if (cost < best_cost) {
      best_cost = cost;
      best.clear();
    }
    if (cost == best_cost) best.push_back(c);
  };
  const Local& out = outbound(src);
  const int node = topology_.vertex(src).node;
  if (node >= 0 && node == topology_.vertex(dst).node) {
    std::pair<int64_t, std::vector<LinkId>> inside{INT64_MAX, {}};
    search_local(src, true, dst, &inside);
    if (inside.first != INT64_MAX) {
      inside_path_ = std::move(inside.second);
      offer(inside.first, Choice{nullptr, nullptr, nullptr, true});
    }
  }
  const Local& in = inbound(dst);
  // Ports are sorted by cost, and a fabric leg costs at least 0: once the two ends alone
  // cost more than the best, no later combination can do better.
  for (const Local::Port& a : out.ports) {
    if (a.cost > best_cost) break;
    for (const Local::Port& b : in.ports) {
      if (a.cost + b.cost > best_cost) break;
      const FabricDag& dag = fabric_dag(a.fabric, b.fabric);
      if (dag.cost == INT64_MAX) continue;
      offer(a.cost + dag.cost + b.cost, Choice{&a, &b, &dag, false});
    }
  }
  DTSIM_CHECK(best_cost != INT64_MAX,
              "destination unreachable: the cluster builder left the graph disconnected");
  return best_cost;
}

std::span<const LinkId> Router::route(VertexId src, VertexId dst) {
  return links(route_ref(src, dst));
}

Router::RouteRef Router::route_ref(VertexId src, VertexId dst) {
  if (src == dst) return {};
  const uint64_t key = PairMap<RouteRef>::key(src, dst);
  if (const RouteRef* known = cache_.find(key)) return *known;
  std::vector<Choice> best;
  cheapest(src, dst, best);
  // Pick among equal-cost choices, then among equal-cost fabric paths, by a hash of the
  // pair and the hop, so that the choice is deterministic and well spread.
  uint64_t h = mix(key);
  const Choice& c = best[h % best.size()];
  const auto begin = static_cast<uint32_t>(route_links_.size());
  if (c.inside) {
    route_links_.insert(route_links_.end(), inside_path_.begin(), inside_path_.end());
  } else {
    route_links_.insert(route_links_.end(), c.out->links.begin(), c.out->links.end());
    std::vector<LinkId> fabric;
    for (VertexId v = c.in->fabric; v != c.out->fabric;) {
      h = mix(h);
      const auto& preds = c.dag->preds.at(v);
      const LinkId l = preds.size() == 1 ? preds[0] : preds[h % preds.size()];
      fabric.push_back(l);
      v = topology_.link(l).src;
    }
    route_links_.insert(route_links_.end(), fabric.rbegin(), fabric.rend());
    route_links_.insert(route_links_.end(), c.in->links.begin(), c.in->links.end());
  }
  const RouteRef ref{begin, static_cast<uint32_t>(route_links_.size() - begin)};
  cache_.insert(key, ref);
  return ref;
}

uint64_t Router::count_equal_cost_paths(VertexId src, VertexId dst) {
  if (src == dst) return 1;
  std::vector<Choice> best;
  cheapest(src, dst, best);
  uint64_t total = 0;
  for (const Choice& c : best) {
    if (c.inside) {
      ++total;
      continue;
    }
    // Paths from the DAG's source to each vertex, memoised.
    std::unordered_map<VertexId, uint64_t> memo{{c.out->fabric, 1}};
    std::function<uint64_t(VertexId)> paths = [&](VertexId v) -> uint64_t {
      if (auto it = memo.find(v); it != memo.end()) return it->second;
      uint64_t n = 0;
      for (LinkId l : c.dag->preds.at(v)) n += paths(topology_.link(l).src);
      return memo[v] = n;
    };
    total += paths(c.in->fabric);
  }
  return total;
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
