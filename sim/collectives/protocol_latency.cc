// The collective library's cost per call, protocol by protocol (NCCL's tuning model): a
// launch cost, a cost for every hop one piece of data crosses, and the protocol's share of
// the links' rate; and the choice of the cheapest protocol.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "sim/collectives/nccl_tuning.h"
#include "sim/collectives/plan_util.h"
#include "sim/collectives/planner.h"

namespace dtsim {

namespace {

using namespace collective_detail;

Duration hop(const GroupLayout& l, int i, int j, const ProtocolCosts& lat) {
  const auto a = static_cast<size_t>(i);
  const auto b = static_cast<size_t>(j);
  const bool same_node = l.region_of[a] == l.region_of[b] && l.node_of[a] == l.node_of[b];
  return same_node ? lat.intra_node_step : lat.network_step;
}

// The hops of a chain of member indices, in order.
Duration chain(const GroupLayout& l, const std::vector<int>& order, const ProtocolCosts& lat) {
  Duration sum = Duration::zero();
  for (size_t k = 1; k < order.size(); ++k) sum += hop(l, order[k - 1], order[k], lat);
  return sum;
}

// A ring is pipelined: a piece crosses p-1 hops (twice for all-reduce), whatever the
// number of pieces; with the members in node order (channel_rings) that is NCCL's
// (p - nodes) NVLink steps and nodes - 1 network steps.
Duration ring(CollectiveOp op, const GroupLayout& l, const CollectiveOptions& o,
              const ProtocolCosts& lat) {
  const int p = static_cast<int>(l.members.size());
  std::vector<int> order(static_cast<size_t>(p));
  const bool rooted = op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce;
  if (rooted) {
    for (int k = 0; k < p; ++k) order[static_cast<size_t>(k)] = (o.root + k) % p;
  } else {
    order = channel_rings(l).front();
  }
  const Duration once = chain(l, order, lat);
  return op == CollectiveOp::kAllReduce ? once + once : once;
}

// A tree: the deepest leaf's way to the root (up and down again for all-reduce).
Duration tree(CollectiveOp op, const GroupLayout& l, const CollectiveOptions& o,
              const ProtocolCosts& lat) {
  const int p = static_cast<int>(l.members.size());
  const BinaryTree t = trees_for(op, p, o.root).front();
  Duration deepest = Duration::zero();
  for (int v = 0; v < p; ++v) {
    Duration way = Duration::zero();
    for (int u = v; t.parent[static_cast<size_t>(u)] >= 0; u = t.parent[static_cast<size_t>(u)])
      way += hop(l, u, t.parent[static_cast<size_t>(u)], lat);
    deepest = std::max(deepest, way);
  }
  return op == CollectiveOp::kAllReduce ? deepest + deepest : deepest;
}

Duration halving_doubling(CollectiveOp op, const GroupLayout& l, const ProtocolCosts& lat) {
  const int p = static_cast<int>(l.members.size());
  Duration once = Duration::zero();
  for (int d = 1; d < p; d *= 2) once += hop(l, 0, d, lat);
  return op == CollectiveOp::kAllReduce ? once + once : once;
}

// Intra-group ring, inter-group ring (twice each for all-reduce).
Duration two_level(CollectiveOp op, const GroupLayout& l, const TwoLevelRings& rings,
                   const ProtocolCosts& lat) {
  const Duration once = chain(l, rings.intra.front(), lat) + chain(l, rings.inter.front(), lat);
  return op == CollectiveOp::kAllReduce ? once + once : once;
}

// One step: the slowest kind of hop it uses.
Duration direct(CollectiveOp op, const GroupLayout& l, const ProtocolCosts& lat) {
  const int p = static_cast<int>(l.members.size());
  Duration worst = Duration::zero();
  if (op == CollectiveOp::kSendRecv) {
    for (int i = 0; i + 1 < p; i += 2) worst = std::max(worst, hop(l, i, i + 1, lat));
    return worst;
  }
  for (int i = 1; i < p; ++i) worst = std::max(worst, hop(l, 0, i, lat));
  return worst;
}

}  // namespace

Duration protocol_latency(CollectiveOp op, CollectiveAlgorithm algorithm,
                          const GroupLayout& layout, Bytes bytes,
                          const CollectiveOptions& options, const ProtocolCosts& lat) {
  if (layout.members.size() < 2 || bytes.count() <= 0) return Duration::zero();
  Duration hops = Duration::zero();
  switch (algorithm) {
    case CollectiveAlgorithm::kRing:
      hops = ring(op, layout, options, lat);
      break;
    case CollectiveAlgorithm::kTree:
      hops = tree(op, layout, options, lat);
      break;
    case CollectiveAlgorithm::kHalvingDoubling:
      hops = halving_doubling(op, layout, lat);
      break;
    case CollectiveAlgorithm::kHierarchical:
      hops = two_level(op, layout, two_level_rings(group_by(layout.node_of)), lat);
      break;
    case CollectiveAlgorithm::kCrossRegion:
      hops = two_level(op, layout, two_level_rings(group_by(layout.region_of)), lat);
      break;
    case CollectiveAlgorithm::kTorus2D:
      hops = two_level(op, layout, torus_rings(torus_grid(layout, options)), lat);
      break;
    case CollectiveAlgorithm::kDirect:
      hops = direct(op, layout, lat);
      break;
    case CollectiveAlgorithm::kNvls:
      // NCCL's NVLS latency replaces the ring's base and steps.
      return nccl_nvls_latency();
    case CollectiveAlgorithm::kAuto:
      break;
  }
  return lat.base + hops;
}

ProtocolChoice choose_protocol(CollectiveOp op, CollectiveAlgorithm algorithm,
                               const GroupLayout& layout, Bytes bytes,
                               const CollectiveOptions& options, const ProtocolTable& protocols,
                               Duration bandwidth_time) {
  std::optional<ProtocolChoice> best;
  for (CollectiveProtocol p : kAllCollectiveProtocols) {
    const ProtocolCosts& c = costs_of(protocols, p);
    if (!(c.bandwidth_fraction > 0)) continue;
    // The protocol's data moves at bandwidth_fraction of the links' rate.
    const Duration slower = Duration::ns(static_cast<int64_t>(std::llround(
        static_cast<double>(bandwidth_time.count_ns()) * (1 / c.bandwidth_fraction - 1))));
    const Duration cost = protocol_latency(op, algorithm, layout, bytes, options, c) + slower;
    if (!best || cost < best->cost) best = ProtocolChoice{p, cost};
  }
  return best.value_or(ProtocolChoice{});
}

}  // namespace dtsim
