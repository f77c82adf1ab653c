// Closed-form alpha-beta time of every plan shape (Thakur, Rabenseifner & Gropp 2005 style:
// steps * (alpha + bytes per step / bandwidth)), and the auto choice built on it.
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/clock_range.h"
#include "sim/collectives/nccl_tuning.h"
#include "sim/collectives/plan_util.h"
#include "sim/collectives/planner.h"

namespace dtsim {

namespace {

using namespace collective_detail;

// Estimates of far-too-slow inputs (a 1 bps WAN) pass the int64-ns clock: they saturate at
// Duration::infinite(), which ranks last among choices; the network model then says the
// run passes the clock (sim/clock_range.h), instead of a signed overflow here.
Duration times(Duration d, int64_t k) {
  const auto t = later_within_clock(Time::zero(), d, k);
  return t ? *t : Duration::infinite();
}
Duration plus(Duration a, Duration b) {
  const auto t = sum_within_clock(a, b);
  return t ? *t : Duration::infinite();
}

enum Level { kIntraNode = 0, kInterNode = 1, kInterRegion = 2 };
constexpr int kNumLevels = 3;
// Bytes the busiest rank moves at each level in one step; 0 where the level is absent.
using LevelBytes = std::array<int64_t, kNumLevels>;

int level_between(const GroupLayout& layout, int i, int j) {
  const auto a = static_cast<size_t>(i);
  const auto b = static_cast<size_t>(j);
  if (layout.region_of[a] != layout.region_of[b]) return kInterRegion;
  return layout.node_of[a] != layout.node_of[b] ? kInterNode : kIntraNode;
}

Duration level_cost(const AlphaBeta& ab, int level, Bytes bytes) {
  static constexpr const char* kNames[] = {"intra-node", "inter-node", "inter-region"};
  const Duration alpha = level == kIntraNode   ? ab.intra_node_alpha
                         : level == kInterNode ? ab.inter_node_alpha
                                               : ab.inter_region_alpha;
  const Bandwidth bw = level == kIntraNode   ? ab.intra_node_bw
                       : level == kInterNode ? ab.inter_node_bw
                                             : ab.inter_region_bw;
  if (!(bw.bytes_per_second() > 0)) {
    throw std::invalid_argument(std::string("estimate_time: the ") + kNames[level] +
                                " bandwidth must be positive for a group that uses that level");
  }
  return alpha + bytes / bw;
}

// The slowest level present bounds the step.
Duration step_cost(const AlphaBeta& ab, const LevelBytes& load) {
  Duration worst = Duration::zero();
  for (int l = 0; l < kNumLevels; ++l) {
    if (load[static_cast<size_t>(l)] > 0) {
      worst = std::max(worst, level_cost(ab, l, Bytes(load[static_cast<size_t>(l)])));
    }
  }
  return worst;
}

// Every rank moves `bytes` per step, over whichever of these (member index) edges it uses.
template <typename Edges>
LevelBytes uniform_load(const GroupLayout& layout, const Edges& edges, Bytes bytes) {
  LevelBytes load{};
  for (const auto& [a, b] : edges)
    load[static_cast<size_t>(level_between(layout, a, b))] = bytes.count();
  return load;
}

using Edges = std::vector<std::pair<int, int>>;

// Every edge carries `bytes` per step; a rank's edges at one level add up (several rings
// through one rank), and the busiest rank sets each level's load.
LevelBytes busiest_load(const GroupLayout& layout, const Edges& edges, Bytes bytes) {
  std::vector<LevelBytes> sent(layout.members.size(), LevelBytes{});
  LevelBytes load{};
  for (const auto& [a, b] : edges) {
    int64_t& s = sent[static_cast<size_t>(a)][static_cast<size_t>(level_between(layout, a, b))];
    s += bytes.count();
  }
  for (const LevelBytes& s : sent) {
    for (size_t l = 0; l < load.size(); ++l) load[l] = std::max(load[l], s[l]);
  }
  return load;
}

Edges ring_edges(const std::vector<std::vector<int>>& rings) {
  Edges edges;
  for (const auto& ring : rings) {
    if (ring.size() < 2) continue;
    for (size_t a = 0; a < ring.size(); ++a)
      edges.emplace_back(ring[a], ring[(a + 1) % ring.size()]);
  }
  return edges;
}

Edges tree_edges(const BinaryTree& t) {
  Edges edges;
  for (size_t v = 0; v < t.parent.size(); ++v) {
    if (t.parent[v] >= 0) edges.emplace_back(static_cast<int>(v), t.parent[v]);
  }
  return edges;
}

std::vector<int> identity(int p) {
  std::vector<int> v(static_cast<size_t>(p));
  for (int i = 0; i < p; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

// Ring: 2(p-1) (all-reduce) or p-1 steps of ceil(n/p); broadcast/reduce: a chain of p-1
// hops pipelined in c = ceil(n / chunk_bytes) chunks of s = ceil(n/c), (p-1) + c-1 steps.
// A chain's hops mostly stay inside a node, so charging every step at its one WAN hop would
// be far off: the chain costs the first chunk's trip (the sum of the hop costs) plus c-1
// chunks through the slowest hop. With equal hops that is (p-1 + c-1)(alpha + s/B).
Duration ring_time(CollectiveOp op, const GroupLayout& layout, Bytes n,
                   const CollectiveOptions& options, const AlphaBeta& ab) {
  const int p = static_cast<int>(layout.members.size());
  if (op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce) {
    const int64_t chunks = ceil_div(n.count(), options.chunk_bytes.count());
    const Bytes chunk = piece_of(n, chunks);
    Duration first_chunk = Duration::zero();
    Duration slowest = Duration::zero();
    for (int k = 0; k + 1 < p; ++k) {
      const int level = level_between(layout, (options.root + k) % p, (options.root + k + 1) % p);
      const Duration hop = level_cost(ab, level, chunk);
      first_chunk += hop;
      slowest = std::max(slowest, hop);
    }
    return plus(first_chunk, times(slowest, chunks - 1));
  }
  const int64_t steps = op == CollectiveOp::kAllReduce ? 2 * (p - 1) : p - 1;
  const std::vector<std::vector<int>> rings = channel_rings(layout);
  const Bytes piece = piece_of(n, p * static_cast<int64_t>(rings.size()));
  return times(step_cost(ab, busiest_load(layout, ring_edges(rings), piece)), steps);
}

// Tree: 2h + c - 1 steps (all-reduce, two trees of ceil(n/2)) or h + c - 1 (one tree of n),
// chunks of s bytes. A rank moves one chunk per tree edge it touches in a full-pipeline
// step: in the double tree an interior node of one tree (parent + 2 children) is a leaf of
// the other (parent): 4 chunks.
Duration tree_time(CollectiveOp op, const GroupLayout& layout, Bytes n,
                   const CollectiveOptions& options, const AlphaBeta& ab) {
  const int p = static_cast<int>(layout.members.size());
  const bool all_reduce = op == CollectiveOp::kAllReduce;
  const std::vector<BinaryTree> trees = trees_for(op, p, options.root);
  const Bytes per_tree = all_reduce ? piece_of(n, 2) : n;
  const int64_t chunks = ceil_div(per_tree.count(), options.chunk_bytes.count());
  const int64_t h = trees.front().root_height();
  int64_t fanout = 1;
  for (int v = 0; v < p; ++v) {
    int64_t edges = 0;
    for (const BinaryTree& t : trees) {
      // A single-tree broadcast or reduce uses each edge in one direction only: a rank
      // sends to its children (or receives from them) and talks once to its parent.
      edges += all_reduce ? t.num_children(v) + (t.parent[static_cast<size_t>(v)] >= 0 ? 1 : 0)
                          : t.num_children(v);
    }
    fanout = std::max(fanout, edges);
  }
  Edges edges;
  for (const BinaryTree& t : trees) {
    const Edges e = tree_edges(t);
    edges.insert(edges.end(), e.begin(), e.end());
  }
  const Bytes busiest(piece_of(per_tree, chunks).count() * fanout);
  const int64_t steps = (all_reduce ? 2 * h : h) + chunks - 1;
  return times(step_cost(ab, uniform_load(layout, edges, busiest)), steps);
}

// Halving/doubling: the step with partner distance d moves d pieces of ceil(n/p).
Duration halving_doubling_time(CollectiveOp op, const GroupLayout& layout, Bytes n,
                               const AlphaBeta& ab) {
  const int p = static_cast<int>(layout.members.size());
  const Bytes piece = piece_of(n, p);
  Duration one_way = Duration::zero();
  for (int d = 1; d < p; d *= 2) {
    Edges pairs;
    for (int i = 0; i < p; ++i) pairs.emplace_back(i, i ^ d);
    one_way += step_cost(ab, uniform_load(layout, pairs, Bytes(piece.count() * d)));
  }
  return op == CollectiveOp::kAllReduce ? one_way + one_way : one_way;
}

// Two-level with N groups of g: intra RS (g-1)(a1 + ceil(n/g)/B1) + inter AR
// 2(N-1)(a2 + ceil(n/g/N)/B2) + intra AG (g-1)(a1 + ceil(n/g)/B1); RS and AG drop a half.
Duration two_level_time(CollectiveOp op, const GroupLayout& layout, const TwoLevelRings& rings,
                        Bytes n, const AlphaBeta& ab) {
  const int64_t groups = static_cast<int64_t>(rings.intra.size());
  const int64_t g = static_cast<int64_t>(rings.intra.front().size());
  const Duration intra =
      g > 1 ? times(step_cost(ab, uniform_load(layout, ring_edges(rings.intra), piece_of(n, g))), g - 1)
            : Duration::zero();
  const Duration inter_step =
      groups > 1
          ? step_cost(ab, uniform_load(layout, ring_edges(rings.inter), piece_of(n, g * groups)))
          : Duration::zero();
  switch (op) {
    case CollectiveOp::kAllReduce:
      return plus(plus(intra, times(inter_step, 2 * (groups - 1))), intra);
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
      return plus(intra, times(inter_step, groups - 1));
    default:
      return Duration::zero();
  }
}

// all_to_all: one step in which a rank sends ceil(n/p) to each peer; its busiest level load
// is the number of peers at that level times the block. send_recv: one step of n per pair.
Duration direct_time(CollectiveOp op, const GroupLayout& layout, Bytes n, const AlphaBeta& ab) {
  const int p = static_cast<int>(layout.members.size());
  if (op == CollectiveOp::kSendRecv) {
    Edges pairs;
    for (int i = 0; i + 1 < p; i += 2) pairs.emplace_back(i, i + 1);
    return step_cost(ab, uniform_load(layout, pairs, n));
  }
  std::map<int, int64_t> per_region;
  std::map<std::pair<int, int>, int64_t> per_node;
  for (size_t i = 0; i < layout.members.size(); ++i) {
    ++per_region[layout.region_of[i]];
    ++per_node[{layout.region_of[i], layout.node_of[i]}];
  }
  LevelBytes peers{};
  for (size_t i = 0; i < layout.members.size(); ++i) {
    const int64_t region = per_region[layout.region_of[i]];
    const int64_t node = per_node[{layout.region_of[i], layout.node_of[i]}];
    const LevelBytes mine{node - 1, region - node, p - region};
    for (size_t l = 0; l < peers.size(); ++l) peers[l] = std::max(peers[l], mine[l]);
  }
  const int64_t block = piece_of(n, p).count();
  for (auto& v : peers) v *= block;
  return step_cost(ab, peers);
}

// NVLS: one step in which every member moves n + ceil(n/p) each way over its link to the
// NVSwitch (plan_nvls).
Duration nvls_time(const GroupLayout& layout, Bytes n, const AlphaBeta& ab) {
  const int p = static_cast<int>(layout.members.size());
  return step_cost(ab, uniform_load(layout, ring_edges({identity(p)}), nvls_bytes_each_way(n, p)));
}

// The alpha-beta time of the transfers alone.
Duration transfer_time(CollectiveOp op, CollectiveAlgorithm algorithm, const GroupLayout& layout,
                       Bytes bytes, const CollectiveOptions& options, const AlphaBeta& ab) {
  switch (algorithm) {
    case CollectiveAlgorithm::kRing:
      return ring_time(op, layout, bytes, options, ab);
    case CollectiveAlgorithm::kTree:
      return tree_time(op, layout, bytes, options, ab);
    case CollectiveAlgorithm::kHalvingDoubling:
      return halving_doubling_time(op, layout, bytes, ab);
    case CollectiveAlgorithm::kHierarchical:
      return two_level_time(op, layout, two_level_rings(group_by(layout.node_of)), bytes, ab);
    case CollectiveAlgorithm::kCrossRegion:
      return two_level_time(op, layout, two_level_rings(group_by(layout.region_of)), bytes, ab);
    case CollectiveAlgorithm::kTorus2D:
      return two_level_time(op, layout, torus_rings(torus_grid(layout, options)), bytes, ab);
    case CollectiveAlgorithm::kDirect:
      return direct_time(op, layout, bytes, ab);
    case CollectiveAlgorithm::kNvls:
      return nvls_time(layout, bytes, ab);
    case CollectiveAlgorithm::kAuto:
      break;  // rejected by estimate_time's applicability check
  }
  return Duration::zero();
}

}  // namespace

Duration estimate_transfer_time(CollectiveOp op, CollectiveAlgorithm algorithm,
                                const GroupLayout& layout, Bytes bytes,
                                const CollectiveOptions& options, const AlphaBeta& ab) {
  if (std::string error = applicability_error(op, algorithm, layout, options); !error.empty()) {
    throw std::invalid_argument(error);
  }
  if (bytes.count() < 0) {
    throw std::invalid_argument("a collective cannot move a negative size (" +
                                std::to_string(bytes.count()) + " bytes)");
  }
  if (layout.members.size() < 2 || bytes.count() == 0) return Duration::zero();
  return transfer_time(op, algorithm, layout, bytes, options, ab);
}

Duration estimate_bandwidth_time(CollectiveOp op, CollectiveAlgorithm algorithm,
                                 const GroupLayout& layout, Bytes bytes,
                                 const CollectiveOptions& options, const AlphaBeta& ab) {
  AlphaBeta rates = ab;
  rates.intra_node_alpha = rates.inter_node_alpha = rates.inter_region_alpha = Duration::zero();
  return estimate_transfer_time(op, algorithm, layout, bytes, options, rates);
}

Duration protocol_cost(CollectiveOp op, CollectiveAlgorithm algorithm, const GroupLayout& layout,
                       Bytes bytes, const CollectiveOptions& options, const AlphaBeta& ab) {
  const Duration bandwidth = estimate_bandwidth_time(op, algorithm, layout, bytes, options, ab);
  if (!ab.nccl.runs_nccl() || !nccl_tunes(op) || layout.members.size() < 2 || bytes.count() <= 0 ||
      !nccl_model_time(op, algorithm, CollectiveProtocol::kSimple, layout, bytes, ab)) {
    // Not a call NCCL tunes (or an algorithm it does not run, such as halving-doubling
    // asked for by name): the cheapest protocol.
    return choose_protocol(op, algorithm, layout, bytes, options, ab.protocols, bandwidth).cost;
  }
  const NcclChoice nccl = nccl_choice(op, layout, bytes, ab, algorithm);
  ProtocolCosts costs = costs_of(ab.protocols, nccl.protocol);
  if (algorithm == CollectiveAlgorithm::kNvls) {
    costs.bandwidth_fraction *= nccl_nvls_efficiency(ab.nccl.compute_capability);
  }
  ProtocolTable only{};
  only[static_cast<size_t>(nccl.protocol)] = costs;
  return choose_protocol(op, algorithm, layout, bytes, options, only, bandwidth).cost;
}

Duration estimate_time(CollectiveOp op, CollectiveAlgorithm algorithm, const GroupLayout& layout,
                       Bytes bytes, const CollectiveOptions& options, const AlphaBeta& ab) {
  return estimate_transfer_time(op, algorithm, layout, bytes, options, ab) +
         protocol_cost(op, algorithm, layout, bytes, options, ab);
}

CollectiveAlgorithm choose_algorithm(CollectiveOp op, const GroupLayout& layout, Bytes bytes,
                                     const CollectiveOptions& options, const AlphaBeta& ab) {
  // NCCL runs what its own model picks. A malformed layout (the ring reports it) or an
  // algorithm the options rule out falls through to the search below, which says why.
  if (ab.nccl.runs_nccl() && nccl_tunes(op) && layout.members.size() >= 2 &&
      applicability_error(op, CollectiveAlgorithm::kRing, layout, options).empty()) {
    const CollectiveAlgorithm a = nccl_choice(op, layout, bytes, ab).algorithm;
    if (applicability_error(op, a, layout, options).empty()) return a;
  }
  std::optional<CollectiveAlgorithm> best;
  Duration best_time = Duration::infinite();
  std::string reasons;
  for (CollectiveAlgorithm a : algorithms_for(op)) {
    if (std::string error = applicability_error(op, a, layout, options); !error.empty()) {
      // A malformed layout gives every algorithm the same reason: say it once.
      if (reasons.find(error) == std::string::npos)
        reasons += (reasons.empty() ? "" : "; ") + error;
      continue;
    }
    const Duration t = estimate_time(op, a, layout, bytes, options, ab);
    if (!best || t < best_time) {
      best = a;
      best_time = t;
    }
  }
  if (!best) {
    throw std::invalid_argument("no algorithm applies to " + std::string(collective_op_name(op)) +
                                ": " + reasons);
  }
  return *best;
}

}  // namespace dtsim
