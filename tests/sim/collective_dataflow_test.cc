// Symbolic data-flow checks of collective plans: every step of a plan must match the
// textbook schedule rebuilt here (who sends which pieces to whom, reduce or copy), and
// running that schedule on per-piece contribution counts must complete the operation
// (every rank holds every piece with each rank's contribution exactly once, etc.).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "sim/collectives/plan_util.h"
#include "sim/collectives/planner.h"

namespace dtsim {
namespace {

using collective_detail::BinaryTree;
using Op = CollectiveOp;
using Algo = CollectiveAlgorithm;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int mod(int a, int k) { return ((a % k) + k) % k; }

// A transfer of the reference schedule, between member indices.
struct RefTransfer {
  int src = 0;
  int dst = 0;
  int64_t bytes = 0;
  std::vector<int> pieces;
  bool reduce = false;  // dst adds src's counts; otherwise dst takes a copy
};

struct Reference {
  std::vector<std::vector<RefTransfer>> steps;
  int pieces = 0;
  std::vector<int> owned;  // all_gather: the piece member i starts with

  void add(size_t step, RefTransfer t) {
    if (steps.size() <= step) steps.resize(step + 1);
    steps[step].push_back(std::move(t));
  }
};

// Ring reduce-scatter over `ring` (member indices), piece groups indexed by ring position:
// at step t position a adds group (a - t) mod k into position a+1, which leaves position a
// with group (a+1) mod k complete after k-1 steps. Returns the number of steps.
size_t ring_rs(Reference& ref, size_t base, const std::vector<int>& ring,
               const std::vector<std::vector<int>>& groups, int64_t bytes) {
  const int k = static_cast<int>(ring.size());
  for (int t = 0; t + 1 < k; ++t) {
    for (int a = 0; a < k; ++a) {
      ref.add(base + static_cast<size_t>(t),
              {ring[static_cast<size_t>(a)], ring[static_cast<size_t>((a + 1) % k)], bytes,
               groups[static_cast<size_t>(mod(a - t, k))], true});
    }
  }
  return static_cast<size_t>(k - 1);
}

// Ring all-gather: position a starts owning group (a + offset) mod k and at step t forwards
// group (a + offset - t) mod k, the one it received last.
size_t ring_ag(Reference& ref, size_t base, const std::vector<int>& ring,
               const std::vector<std::vector<int>>& groups, int64_t bytes, int offset) {
  const int k = static_cast<int>(ring.size());
  for (int t = 0; t + 1 < k; ++t) {
    for (int a = 0; a < k; ++a) {
      ref.add(base + static_cast<size_t>(t),
              {ring[static_cast<size_t>(a)], ring[static_cast<size_t>((a + 1) % k)], bytes,
               groups[static_cast<size_t>(mod(a + offset - t, k))], false});
    }
  }
  return static_cast<size_t>(k - 1);
}

// Two-level rings over `groups` (member indices; N groups of g). Piece (q, r) = q*N + r:
// intra-group rings move the N pieces of group q, inter-group rings single pieces. A plain
// ring is the case of one group.
Reference two_level_ref(Op op, const std::vector<std::vector<int>>& groups, int64_t n) {
  const int big_n = static_cast<int>(groups.size());
  const int g = static_cast<int>(groups.front().size());
  const int p = g * big_n;
  const int64_t intra_bytes = ceil_div(n, g);
  const int64_t inter_bytes = ceil_div(n, p);
  Reference ref;
  ref.pieces = p;
  std::vector<std::vector<int>> intra_groups(static_cast<size_t>(g));
  for (int q = 0; q < g; ++q) {
    for (int r = 0; r < big_n; ++r) intra_groups[static_cast<size_t>(q)].push_back(q * big_n + r);
  }
  const auto inter_ring = [&](int l) {
    std::vector<int> ring;
    for (const auto& grp : groups) ring.push_back(grp[static_cast<size_t>(l)]);
    return ring;
  };
  const auto inter_groups = [&](int q) {
    std::vector<std::vector<int>> out;
    for (int r = 0; r < big_n; ++r) out.push_back({q * big_n + r});
    return out;
  };
  size_t base = 0;
  if (op == Op::kAllReduce || op == Op::kReduceScatter) {
    for (const auto& grp : groups) ring_rs(ref, base, grp, intra_groups, intra_bytes);
    base += static_cast<size_t>(g - 1);
    // Local index l now holds group (l+1) mod g complete within its group.
    for (int l = 0; l < g; ++l) {
      const auto ring = inter_ring(l);
      const auto pieces = inter_groups((l + 1) % g);
      const size_t rs = ring_rs(ref, base, ring, pieces, inter_bytes);
      if (op == Op::kAllReduce) ring_ag(ref, base + rs, ring, pieces, inter_bytes, 1);
    }
    base += static_cast<size_t>(op == Op::kAllReduce ? 2 * (big_n - 1) : big_n - 1);
    if (op == Op::kAllReduce) {
      for (const auto& grp : groups) ring_ag(ref, base, grp, intra_groups, intra_bytes, 1);
    }
  } else {
    // all_gather: member (j, l) starts with piece (l, j).
    ref.owned.assign(static_cast<size_t>(p), -1);
    for (int j = 0; j < big_n; ++j) {
      for (int l = 0; l < g; ++l) {
        ref.owned[static_cast<size_t>(groups[static_cast<size_t>(j)][static_cast<size_t>(l)])] =
            l * big_n + j;
      }
    }
    for (int l = 0; l < g; ++l) ring_ag(ref, 0, inter_ring(l), inter_groups(l), inter_bytes, 0);
    base += static_cast<size_t>(big_n - 1);
    for (const auto& grp : groups) ring_ag(ref, base, grp, intra_groups, intra_bytes, 0);
  }
  return ref;
}

// Recursive halving: at distance d, rank i keeps the half of its 2d-block that contains i
// and adds the other half into its partner i^d. Doubling sends the whole d-block.
Reference halving_doubling_ref(Op op, int p, int64_t n) {
  Reference ref;
  ref.pieces = p;
  const int64_t piece = ceil_div(n, p);
  size_t step = 0;
  const auto range = [](int lo, int len) {
    std::vector<int> v;
    for (int x = lo; x < lo + len; ++x) v.push_back(x);
    return v;
  };
  if (op != Op::kAllGather) {
    for (int d = p / 2; d >= 1; d /= 2, ++step) {
      for (int i = 0; i < p; ++i) {
        const int block = i & ~(2 * d - 1);
        const int sent = (i & d) != 0 ? block : block + d;
        ref.add(step, {i, i ^ d, piece * d, range(sent, d), true});
      }
    }
  }
  if (op != Op::kReduceScatter) {
    ref.owned = range(0, p);
    for (int d = 1; d < p; d *= 2, ++step) {
      for (int i = 0; i < p; ++i)
        ref.add(step, {i, i ^ d, piece * d, range(i & ~(d - 1), d), false});
    }
  }
  return ref;
}

// Pipelined trees, straight from the schedule: up at step k + height(v), down at
// step k + base + depth(u) (base = h for all-reduce, 0 for broadcast).
Reference tree_ref(Op op, int p, int64_t n, const CollectiveOptions& options) {
  const bool all_reduce = op == Op::kAllReduce;
  std::vector<BinaryTree> trees;
  if (all_reduce) {
    trees.push_back(collective_detail::nccl_binary_tree(p));
    trees.push_back(collective_detail::second_tree(trees.front()));
  } else {
    trees.push_back(collective_detail::rooted_tree(p, options.root));
  }
  const int64_t per_tree = all_reduce ? ceil_div(n, 2) : n;
  const int64_t c = ceil_div(per_tree, options.chunk_bytes.count());
  const int64_t s = ceil_div(per_tree, c);
  const int64_t h = trees.front().root_height();
  Reference ref;
  ref.pieces = static_cast<int>(c) * static_cast<int>(trees.size());
  for (size_t ti = 0; ti < trees.size(); ++ti) {
    const BinaryTree& t = trees[ti];
    for (int64_t k = 0; k < c; ++k) {
      const int piece = static_cast<int>(ti * static_cast<size_t>(c) + static_cast<size_t>(k));
      for (int v = 0; v < p; ++v) {
        const auto vi = static_cast<size_t>(v);
        if (op != Op::kBroadcast && t.parent[vi] >= 0) {
          ref.add(static_cast<size_t>(k + t.height[vi]), {v, t.parent[vi], s, {piece}, true});
        }
        if (op != Op::kReduce) {
          for (int child : t.children[vi]) {
            if (child < 0) continue;
            ref.add(static_cast<size_t>(k + (all_reduce ? h : 0) + t.depth[vi]),
                    {v, child, s, {piece}, false});
          }
        }
      }
    }
  }
  return ref;
}

// Chain broadcast: hop k carries chunk j at step j + k. Reduce: the hop farthest from the
// root starts, hop k carries chunk j toward the root at step j + (p-2-k).
Reference chain_ref(Op op, int p, int64_t n, const CollectiveOptions& options) {
  const int64_t c = ceil_div(n, options.chunk_bytes.count());
  const int64_t s = ceil_div(n, c);
  Reference ref;
  ref.pieces = static_cast<int>(c);
  const auto at = [&](int k) { return (options.root + k) % p; };
  for (int k = 0; k + 1 < p; ++k) {
    for (int j = 0; j < c; ++j) {
      if (op == Op::kBroadcast) {
        ref.add(static_cast<size_t>(j + k), {at(k), at(k + 1), s, {j}, false});
      } else {
        ref.add(static_cast<size_t>(j + (p - 2 - k)), {at(k + 1), at(k), s, {j}, true});
      }
    }
  }
  return ref;
}

std::vector<std::vector<int>> groups_by(const std::vector<int>& key) {
  std::vector<int> ids;
  std::vector<std::vector<int>> groups;
  for (size_t i = 0; i < key.size(); ++i) {
    const auto it = std::find(ids.begin(), ids.end(), key[i]);
    if (it == ids.end()) {
      ids.push_back(key[i]);
      groups.push_back({static_cast<int>(i)});
    } else {
      groups[static_cast<size_t>(it - ids.begin())].push_back(static_cast<int>(i));
    }
  }
  return groups;
}

Reference reference(Op op, Algo algo, const GroupLayout& layout, int64_t n,
                    const CollectiveOptions& options) {
  const int p = static_cast<int>(layout.members.size());
  std::vector<int> all(static_cast<size_t>(p));
  for (int i = 0; i < p; ++i) all[static_cast<size_t>(i)] = i;
  switch (algo) {
    case Algo::kRing:
      if (op == Op::kBroadcast || op == Op::kReduce) return chain_ref(op, p, n, options);
      return two_level_ref(op, {all}, n);
    case Algo::kTree:
      return tree_ref(op, p, n, options);
    case Algo::kHalvingDoubling:
      return halving_doubling_ref(op, p, n);
    case Algo::kHierarchical:
      return two_level_ref(op, groups_by(layout.node_of), n);
    case Algo::kCrossRegion:
      return two_level_ref(op, groups_by(layout.region_of), n);
    case Algo::kTorus2D: {
      int x = options.torus_x;
      int y = options.torus_y;
      if (x == 0) {
        x = static_cast<int>(groups_by(layout.node_of).front().size());
        y = p / x;
      }
      std::vector<std::vector<int>> rows(static_cast<size_t>(y));
      for (int i = 0; i < p; ++i) rows[static_cast<size_t>(i / x)].push_back(i);
      return two_level_ref(op, rows, n);
    }
    default:
      ADD_FAILURE() << "no reference for " << algorithm_name(algo);
      return {};
  }
}

using Step = std::vector<std::tuple<int, int, int64_t>>;

std::vector<Step> expand(const CollectivePlan& plan) {
  std::vector<Step> steps;
  for (const Phase& ph : plan.phases) {
    Step step;
    for (const Transfer& t : ph.transfers) step.emplace_back(t.src, t.dst, t.bytes.count());
    std::sort(step.begin(), step.end());
    for (int64_t r = 0; r < ph.repeat; ++r) steps.push_back(step);
  }
  return steps;
}

// counts[rank][piece][contributor]
using State = std::vector<std::vector<std::vector<int>>>;

State simulate(const Reference& ref, int p, const State& initial) {
  State state = initial;
  for (const auto& step : ref.steps) {
    State next = state;  // transfers of a step start together: they read the old state
    for (const RefTransfer& t : step) {
      for (int piece : t.pieces) {
        auto& dst = next[static_cast<size_t>(t.dst)][static_cast<size_t>(piece)];
        const auto& src = state[static_cast<size_t>(t.src)][static_cast<size_t>(piece)];
        for (int r = 0; r < p; ++r) {
          const auto ri = static_cast<size_t>(r);
          dst[ri] = t.reduce ? dst[ri] + src[ri] : src[ri];
        }
      }
    }
    state = std::move(next);
  }
  return state;
}

std::vector<int> unit(int p, int i) {
  std::vector<int> v(static_cast<size_t>(p), 0);
  v[static_cast<size_t>(i)] = 1;
  return v;
}

// Plans op/algo, checks it step by step against the reference, then checks the outcome.
void check(Op op, Algo algo, const GroupLayout& layout, int64_t n,
           const CollectiveOptions& options = {}) {
  const int p = static_cast<int>(layout.members.size());
  SCOPED_TRACE(std::string(collective_op_name(op)) + "/" + std::string(algorithm_name(algo)) +
               " p=" + std::to_string(p) + " n=" + std::to_string(n));
  const CollectivePlan plan = plan_collective(op, algo, layout, Bytes(n), options);
  EXPECT_EQ(plan.members, layout.members);
  if (p == 1 || n == 0) {
    EXPECT_TRUE(plan.phases.empty());
    return;
  }
  const Reference ref = reference(op, algo, layout, n, options);
  const std::vector<Step> got = expand(plan);
  ASSERT_EQ(got.size(), ref.steps.size());
  for (size_t s = 0; s < got.size(); ++s) {
    Step want;
    for (const RefTransfer& t : ref.steps[s]) {
      want.emplace_back(layout.members[static_cast<size_t>(t.src)],
                        layout.members[static_cast<size_t>(t.dst)], t.bytes);
    }
    std::sort(want.begin(), want.end());
    ASSERT_EQ(got[s], want) << "step " << s;
  }

  const int root = options.root;
  const std::vector<int> none(static_cast<size_t>(p), 0);
  State init(static_cast<size_t>(p),
             std::vector<std::vector<int>>(static_cast<size_t>(ref.pieces)));
  for (int r = 0; r < p; ++r) {
    for (int q = 0; q < ref.pieces; ++q) {
      auto& cell = init[static_cast<size_t>(r)][static_cast<size_t>(q)];
      if (op == Op::kAllGather) {
        cell = ref.owned[static_cast<size_t>(r)] == q ? unit(p, r) : none;
      } else if (op == Op::kBroadcast) {
        cell = r == root ? unit(p, r) : none;
      } else {
        cell = unit(p, r);
      }
    }
  }
  const State out = simulate(ref, p, init);
  const std::vector<int> full(static_cast<size_t>(p), 1);
  switch (op) {
    case Op::kAllReduce:
      for (int r = 0; r < p; ++r) {
        for (int q = 0; q < ref.pieces; ++q) {
          ASSERT_EQ(out[static_cast<size_t>(r)][static_cast<size_t>(q)], full)
              << "rank " << r << " piece " << q;
        }
      }
      break;
    case Op::kReduceScatter: {
      std::vector<int> owner(static_cast<size_t>(ref.pieces), -1);
      for (int r = 0; r < p; ++r) {
        int complete = 0;
        for (int q = 0; q < ref.pieces; ++q) {
          if (out[static_cast<size_t>(r)][static_cast<size_t>(q)] != full) continue;
          ++complete;
          EXPECT_EQ(owner[static_cast<size_t>(q)], -1) << "piece " << q << " completed twice";
          owner[static_cast<size_t>(q)] = r;
        }
        EXPECT_EQ(complete, 1) << "rank " << r;
      }
      break;
    }
    case Op::kAllGather: {
      std::vector<int> seen(static_cast<size_t>(p), 0);
      for (int q = 0; q < ref.pieces; ++q) {
        const auto& v = out[0][static_cast<size_t>(q)];
        ASSERT_EQ(std::count(v.begin(), v.end(), 1), 1) << "piece " << q;
        ++seen[static_cast<size_t>(std::find(v.begin(), v.end(), 1) - v.begin())];
        for (int r = 1; r < p; ++r)
          ASSERT_EQ(out[static_cast<size_t>(r)][static_cast<size_t>(q)], v);
      }
      EXPECT_EQ(seen, full);
      break;
    }
    case Op::kBroadcast:
      for (int r = 0; r < p; ++r) {
        for (int q = 0; q < ref.pieces; ++q) {
          ASSERT_EQ(out[static_cast<size_t>(r)][static_cast<size_t>(q)], unit(p, root));
        }
      }
      break;
    case Op::kReduce:
      for (int q = 0; q < ref.pieces; ++q) {
        ASSERT_EQ(out[static_cast<size_t>(root)][static_cast<size_t>(q)], full) << "piece " << q;
      }
      break;
    default:
      FAIL();
  }
}

// regions x nodes_per_region x per_node members; member i is global rank 1000 + 7i, so
// that a planner mixing up member indices and ranks shows.
GroupLayout layout_of(int regions, int nodes_per_region, int per_node) {
  GroupLayout l;
  const int p = regions * nodes_per_region * per_node;
  for (int i = 0; i < p; ++i) {
    l.members.push_back(1000 + 7 * i);
    l.node_of.push_back(i / per_node);
    l.region_of.push_back(i / per_node / nodes_per_region);
  }
  return l;
}

GroupLayout flat(int p) { return layout_of(1, 1, p); }

const std::vector<int64_t> kSizes = {1, 7, 1000, 1001, 4096 + 3};

TEST(CollectiveDataflow, RingAllReduceReduceScatterAllGather) {
  for (int p : {1, 2, 3, 5, 8, 16}) {
    for (int64_t n : kSizes) {
      for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather})
        check(op, Algo::kRing, flat(p), n);
    }
  }
}

TEST(CollectiveDataflow, RingBroadcastAndReduceChains) {
  for (int p : {1, 2, 3, 5, 8, 16}) {
    for (int64_t chunk : {1, 100, 1 << 20}) {
      for (int root : {0, p / 2, p - 1}) {
        CollectiveOptions o;
        o.chunk_bytes = Bytes(chunk);
        o.root = root;
        for (int64_t n : {int64_t{1}, int64_t{250}, int64_t{1001}}) {
          if (chunk == 1 && n > 250) continue;  // keeps the symbolic state small
          check(Op::kBroadcast, Algo::kRing, flat(p), n, o);
          check(Op::kReduce, Algo::kRing, flat(p), n, o);
        }
      }
    }
  }
}

TEST(CollectiveDataflow, DoubleBinaryTreeAllReduce) {
  for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16}) {
    for (int64_t chunk : {100, 4096}) {
      CollectiveOptions o;
      o.chunk_bytes = Bytes(chunk);
      for (int64_t n : kSizes) check(Op::kAllReduce, Algo::kTree, flat(p), n, o);
    }
  }
}

TEST(CollectiveDataflow, TreeBroadcastAndReduce) {
  for (int p : {1, 2, 3, 5, 8, 11, 16}) {
    for (int root : {0, 1 % p, p - 1}) {
      CollectiveOptions o;
      o.chunk_bytes = Bytes(100);
      o.root = root;
      for (int64_t n : {int64_t{1}, int64_t{100}, int64_t{1001}}) {
        check(Op::kBroadcast, Algo::kTree, flat(p), n, o);
        check(Op::kReduce, Algo::kTree, flat(p), n, o);
      }
    }
  }
}

TEST(CollectiveDataflow, HalvingDoubling) {
  for (int p : {1, 2, 4, 8, 16}) {
    for (int64_t n : kSizes) {
      for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
        check(op, Algo::kHalvingDoubling, flat(p), n);
      }
    }
  }
}

TEST(CollectiveDataflow, Hierarchical) {
  const std::vector<std::pair<int, int>> shapes = {{1, 1}, {1, 4}, {4, 1}, {2, 3}, {3, 2},
                                                   {4, 4}, {2, 8}, {5, 3}, {3, 5}};
  for (auto [nodes, per_node] : shapes) {
    for (int64_t n : kSizes) {
      for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
        check(op, Algo::kHierarchical, layout_of(1, nodes, per_node), n);
      }
    }
  }
}

TEST(CollectiveDataflow, HierarchicalWithInterleavedNodes) {
  // Members not listed node by node: groups form in order of first appearance.
  GroupLayout l;
  for (int i = 0; i < 12; ++i) {
    l.members.push_back(40 - 3 * i);
    l.node_of.push_back(std::vector<int>{7, 2, 5}[static_cast<size_t>(i % 3)]);
    l.region_of.push_back(0);
  }
  for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
    check(op, Algo::kHierarchical, l, 1000);
  }
}

TEST(CollectiveDataflow, CrossRegion) {
  const std::vector<std::tuple<int, int, int>> shapes = {{1, 2, 2}, {2, 1, 1}, {2, 2, 2}, {3, 1, 3},
                                                         {2, 3, 2}, {4, 2, 2}, {3, 2, 1}};
  for (auto [regions, nodes, per_node] : shapes) {
    for (int64_t n : kSizes) {
      for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
        check(op, Algo::kCrossRegion, layout_of(regions, nodes, per_node), n);
      }
    }
  }
}

TEST(CollectiveDataflow, Torus2DExplicitGrids) {
  const std::vector<std::pair<int, int>> grids = {{1, 1}, {2, 2}, {2, 4}, {4, 2}, {3, 5},
                                                  {5, 3}, {1, 8}, {8, 1}, {4, 4}};
  for (auto [x, y] : grids) {
    CollectiveOptions o;
    o.torus_x = x;
    o.torus_y = y;
    for (int64_t n : kSizes) check(Op::kAllReduce, Algo::kTorus2D, flat(x * y), n, o);
  }
}

TEST(CollectiveDataflow, Torus2DDefaultGridIsNodesByMembersPerNode) {
  for (auto [nodes, per_node] : std::vector<std::pair<int, int>>{{2, 4}, {4, 2}, {3, 3}, {1, 5}}) {
    check(Op::kAllReduce, Algo::kTorus2D, layout_of(1, nodes, per_node), 1001);
  }
}

}  // namespace
}  // namespace dtsim
