// Collective planner: names, applicability, step and phase counts against the closed forms,
// per-rank byte conservation, plan size at scale, and the NCCL tree layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/collectives/plan_util.h"
#include "sim/collectives/planner.h"

namespace dtsim {
namespace {

using Op = CollectiveOp;
using ::testing::HasSubstr;
using Algo = CollectiveAlgorithm;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

const std::vector<Op> kOps = {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather, Op::kBroadcast,
                              Op::kReduce,    Op::kAllToAll,      Op::kSendRecv};
const std::vector<Algo> kAlgos = {
    Algo::kAuto,         Algo::kRing,    Algo::kTree,        Algo::kHalvingDoubling,
    Algo::kHierarchical, Algo::kTorus2D, Algo::kCrossRegion, Algo::kDirect};

GroupLayout layout_of(int regions, int nodes_per_region, int per_node) {
  GroupLayout l;
  const int p = regions * nodes_per_region * per_node;
  for (int i = 0; i < p; ++i) {
    l.members.push_back(3 * i + 5);
    l.node_of.push_back(i / per_node);
    l.region_of.push_back(i / per_node / nodes_per_region);
  }
  return l;
}

GroupLayout flat(int p) { return layout_of(1, 1, p); }

int64_t steps_of(const CollectivePlan& plan) {
  int64_t steps = 0;
  for (const Phase& ph : plan.phases) steps += ph.repeat;
  return steps;
}

struct Totals {
  std::map<int, int64_t> sent;
  std::map<int, int64_t> received;
};

Totals totals_of(const CollectivePlan& plan) {
  Totals t;
  for (const Phase& ph : plan.phases) {
    for (const Transfer& tr : ph.transfers) {
      t.sent[tr.src] += tr.bytes.count() * ph.repeat;
      t.received[tr.dst] += tr.bytes.count() * ph.repeat;
    }
  }
  return t;
}

int64_t total(const std::map<int, int64_t>& m) {
  int64_t s = 0;
  for (const auto& [rank, bytes] : m) s += bytes;
  return s;
}

int64_t get(const std::map<int, int64_t>& m, int rank) {
  const auto it = m.find(rank);
  return it == m.end() ? 0 : it->second;
}

int ceil_log2(int p) {
  int h = 0;
  while ((1 << h) < p) ++h;
  return h;
}

TEST(CollectiveNames, RoundTrip) {
  for (Op op : kOps) {
    EXPECT_EQ(collective_op_from_name(collective_op_name(op)), op);
  }
  for (Algo a : kAlgos) {
    EXPECT_EQ(algorithm_from_name(algorithm_name(a)), a);
    EXPECT_FALSE(algorithm_description(a).empty());
  }
  EXPECT_EQ(collective_op_name(Op::kAllReduce), "all_reduce");
  EXPECT_EQ(collective_op_name(Op::kSendRecv), "send_recv");
  EXPECT_EQ(algorithm_name(Algo::kHalvingDoubling), "halving_doubling");
  EXPECT_EQ(algorithm_name(Algo::kTorus2D), "torus2d");
  EXPECT_EQ(algorithm_name(Algo::kCrossRegion), "cross_region");
  EXPECT_NE(algorithm_description(Algo::kTorus2D).find("Mikami et al. 2018"),
            std::string_view::npos);
  EXPECT_FALSE(collective_op_from_name("allreduce").has_value());
  EXPECT_FALSE(algorithm_from_name("Ring").has_value());
}

TEST(CollectivePlanner, AlgorithmsForEveryOp) {
  EXPECT_EQ(
      algorithms_for(Op::kAllReduce),
      (std::vector<Algo>{Algo::kRing, Algo::kTree, Algo::kHalvingDoubling, Algo::kHierarchical,
                         Algo::kTorus2D, Algo::kCrossRegion, Algo::kNvls}));
  EXPECT_EQ(algorithms_for(Op::kReduceScatter),
            (std::vector<Algo>{Algo::kRing, Algo::kHalvingDoubling, Algo::kHierarchical,
                               Algo::kCrossRegion}));
  EXPECT_EQ(algorithms_for(Op::kAllGather), algorithms_for(Op::kReduceScatter));
  EXPECT_EQ(algorithms_for(Op::kBroadcast), (std::vector<Algo>{Algo::kRing, Algo::kTree}));
  EXPECT_EQ(algorithms_for(Op::kReduce), (std::vector<Algo>{Algo::kRing, Algo::kTree}));
  EXPECT_EQ(algorithms_for(Op::kAllToAll), std::vector<Algo>{Algo::kDirect});
  EXPECT_EQ(algorithms_for(Op::kSendRecv), std::vector<Algo>{Algo::kDirect});
}

void expect_error(Op op, Algo a, const GroupLayout& l, const CollectiveOptions& o,
                  const std::string& text) {
  const std::string error = applicability_error(op, a, l, o);
  EXPECT_NE(error.find(text), std::string::npos) << "got: " << error;
  try {
    plan_collective(op, a, l, MiB(1), o);
    ADD_FAILURE() << "plan_collective accepted: " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(e.what(), error);
  }
}

TEST(CollectivePlanner, ApplicabilityErrors) {
  const CollectiveOptions o;
  expect_error(Op::kAllReduce, Algo::kHalvingDoubling, flat(6), o,
               "halving_doubling needs a power-of-two group, got 6 ranks");
  CollectiveOptions grid;
  grid.torus_x = 4;
  grid.torus_y = 3;
  expect_error(Op::kAllReduce, Algo::kTorus2D, flat(8), grid,
               "torus2d grid 4x3 does not match 8 ranks");
  grid.torus_y = 0;
  expect_error(Op::kAllReduce, Algo::kTorus2D, flat(8), grid, "needs both torus_x and torus_y");

  GroupLayout uneven = flat(5);
  uneven.node_of = {0, 0, 0, 1, 1};
  expect_error(Op::kAllReduce, Algo::kHierarchical, uneven, o,
               "hierarchical needs the same number of members on every node (node 1 has 2 members, "
               "node 0 has 3)");
  expect_error(Op::kAllReduce, Algo::kTorus2D, uneven, o, "same number of members on every node");
  uneven.region_of = {0, 1, 1, 1, 1};
  expect_error(Op::kAllGather, Algo::kCrossRegion, uneven, o,
               "cross_region needs the same number of members in every region");
  expect_error(Op::kSendRecv, Algo::kDirect, flat(5), o, "needs an even group, got 5 ranks");
  expect_error(Op::kAllToAll, Algo::kRing, flat(4), o,
               "ring does not implement all_to_all (available: direct)");
  expect_error(Op::kBroadcast, Algo::kHierarchical, flat(4), o,
               "hierarchical does not implement broadcast (available: ring, tree)");
  expect_error(Op::kAllReduce, Algo::kDirect, flat(4), o, "direct does not implement all_reduce");
  expect_error(Op::kAllReduce, Algo::kAuto, flat(4), o, "choose_algorithm");

  CollectiveOptions root;
  root.root = 4;
  expect_error(Op::kBroadcast, Algo::kRing, flat(4), root,
               "root 4 is not a member index of a group of 4 ranks");
  CollectiveOptions chunk;
  chunk.chunk_bytes = Bytes(0);
  expect_error(Op::kAllReduce, Algo::kTree, flat(4), chunk, "chunk_bytes > 0");
  EXPECT_EQ(applicability_error(Op::kAllReduce, Algo::kRing, flat(4), chunk), "");

  GroupLayout dup = flat(3);
  dup.members = {1, 2, 1};
  expect_error(Op::kAllReduce, Algo::kRing, dup, o, "rank 1 appears twice in the group");
  GroupLayout short_nodes = flat(3);
  short_nodes.node_of.pop_back();
  expect_error(Op::kAllReduce, Algo::kRing, short_nodes, o, "lists 3 members but 2 node_of");
  expect_error(Op::kAllReduce, Algo::kRing, GroupLayout{}, o, "at least one member");

  EXPECT_THROW(plan_collective(Op::kAllReduce, Algo::kRing, flat(4), Bytes(-1), o),
               std::invalid_argument);
  EXPECT_EQ(applicability_error(Op::kAllReduce, Algo::kHalvingDoubling, flat(8), o), "");
  EXPECT_EQ(applicability_error(Op::kSendRecv, Algo::kDirect, flat(1), o), "");
}

// Every (op, algorithm) pair that exists, on one layout each can handle.
struct Case {
  Op op;
  Algo algo;
};

// Every pair but NVLS, which needs one NVSwitch node (NvlsMovesEachSliceThroughTheSwitch).
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Op op : kOps) {
    for (Algo a : algorithms_for(op)) {
      if (a != Algo::kNvls) cases.push_back({op, a});
    }
  }
  return cases;
}

TEST(CollectivePlanner, SingleRankAndZeroBytesHaveNoPhases) {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(std::string(collective_op_name(c.op)) + "/" + std::string(algorithm_name(c.algo)));
    const CollectivePlan one = plan_collective(c.op, c.algo, flat(1), MiB(8), {});
    EXPECT_TRUE(one.phases.empty());
    EXPECT_EQ(one.members, flat(1).members);
    const CollectivePlan empty = plan_collective(c.op, c.algo, layout_of(1, 2, 4), Bytes(0), {});
    EXPECT_TRUE(empty.phases.empty());
    EXPECT_EQ(empty.op, c.op);
    EXPECT_EQ(empty.algorithm, c.algo);
  }
}

TEST(CollectivePlanner, EveryPairConservesBytes) {
  // 2 regions x 2 nodes x 2 members: every algorithm applies (p = 8 is a power of two).
  const GroupLayout l = layout_of(2, 2, 2);
  for (const Case& c : all_cases()) {
    for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{MiB(9).count() + 1}}) {
      SCOPED_TRACE(std::string(collective_op_name(c.op)) + "/" +
                   std::string(algorithm_name(c.algo)) + " n=" + std::to_string(n));
      const CollectivePlan plan = plan_collective(c.op, c.algo, l, Bytes(n), {});
      ASSERT_FALSE(plan.phases.empty());
      const Totals t = totals_of(plan);
      EXPECT_EQ(total(t.sent), total(t.received));
      for (const Phase& ph : plan.phases) {
        EXPECT_GE(ph.repeat, 1);
        for (const Transfer& tr : ph.transfers) {
          EXPECT_NE(tr.src, tr.dst);
          EXPECT_GT(tr.bytes.count(), 0);
          EXPECT_NE(std::find(l.members.begin(), l.members.end(), tr.src), l.members.end());
          EXPECT_NE(std::find(l.members.begin(), l.members.end(), tr.dst), l.members.end());
        }
      }
      for (size_t i = 1; i < plan.phases.size(); ++i) {
        EXPECT_FALSE(collective_detail::same_transfers(plan.phases[i - 1].transfers,
                                                       plan.phases[i].transfers))
            << "adjacent identical phases were not merged at " << i;
      }
    }
  }
}

TEST(CollectivePlanner, RingCountsAndPerRankBytes) {
  for (int p : {2, 3, 5, 8, 16}) {
    for (int64_t n : {int64_t{1}, int64_t{999}, int64_t{MiB(3).count()}}) {
      const GroupLayout l = flat(p);
      const int64_t piece = ceil_div(n, p);
      const CollectivePlan ar = plan_collective(Op::kAllReduce, Algo::kRing, l, Bytes(n), {});
      ASSERT_EQ(ar.phases.size(), 1u);
      EXPECT_EQ(ar.phases[0].repeat, 2 * (p - 1));
      EXPECT_EQ(ar.phases[0].transfers.size(), static_cast<size_t>(p));
      const Totals t = totals_of(ar);
      for (int r : l.members) {
        EXPECT_EQ(get(t.sent, r), 2 * (p - 1) * piece);
        EXPECT_EQ(get(t.received, r), 2 * (p - 1) * piece);
      }
      for (Op op : {Op::kReduceScatter, Op::kAllGather}) {
        const CollectivePlan plan = plan_collective(op, Algo::kRing, l, Bytes(n), {});
        ASSERT_EQ(plan.phases.size(), 1u);
        EXPECT_EQ(steps_of(plan), p - 1);
        for (int r : l.members) EXPECT_EQ(get(totals_of(plan).sent, r), (p - 1) * piece);
      }
    }
  }
}

TEST(CollectivePlanner, RingChainCounts) {
  for (int p : {2, 3, 5, 16}) {
    for (int64_t chunks : {1, 3, 15, 40}) {
      CollectiveOptions o;
      o.chunk_bytes = Bytes(100);
      o.root = p / 2;
      const int64_t n = 100 * chunks - 1;  // ceil(n/100) = chunks, chunk size ceil(n/chunks)
      const int64_t s = ceil_div(n, chunks);
      const GroupLayout l = flat(p);
      for (Op op : {Op::kBroadcast, Op::kReduce}) {
        const CollectivePlan plan = plan_collective(op, Algo::kRing, l, Bytes(n), o);
        EXPECT_EQ(steps_of(plan), (p - 1) + chunks - 1);
        const int64_t phases = chunks >= p - 1 ? 2 * p - 3 : p + chunks - 2;
        EXPECT_EQ(static_cast<int64_t>(plan.phases.size()), phases);
        const Totals t = totals_of(plan);
        const int root = l.members[static_cast<size_t>(o.root)];
        const int end = l.members[static_cast<size_t>((o.root + p - 1) % p)];
        const auto& out = op == Op::kBroadcast ? t.sent : t.received;
        const auto& in = op == Op::kBroadcast ? t.received : t.sent;
        EXPECT_EQ(get(out, root), chunks * s);
        EXPECT_EQ(get(in, root), 0);
        EXPECT_EQ(get(out, end), 0);
        EXPECT_EQ(get(in, end), chunks * s);
        EXPECT_EQ(total(t.sent), (p - 1) * chunks * s);
      }
    }
  }
}

TEST(CollectivePlanner, NcclTreeLayout) {
  for (int p = 1; p <= 70; ++p) {
    SCOPED_TRACE("p=" + std::to_string(p));
    const auto a = collective_detail::nccl_binary_tree(p);
    const auto b = collective_detail::second_tree(a);
    for (const auto* t : {&a, &b}) {
      int roots = 0;
      for (int v = 0; v < p; ++v) {
        const int u = t->parent[static_cast<size_t>(v)];
        if (u < 0) {
          ++roots;
          EXPECT_EQ(v, t->root);
          continue;
        }
        EXPECT_EQ(t->depth[static_cast<size_t>(v)], t->depth[static_cast<size_t>(u)] + 1);
        EXPECT_LT(t->height[static_cast<size_t>(v)], t->height[static_cast<size_t>(u)]);
        EXPECT_LE(t->num_children(v), 2);
      }
      EXPECT_EQ(roots, 1);
      EXPECT_EQ(t->root_height(), ceil_log2(p));
      if (p >= 2) {
        EXPECT_EQ(t->num_children(t->root), 1);
      }
    }
    // Interior nodes of one tree are leaves of the other: all of them for even p, all but
    // one for odd p.
    int both = 0;
    for (int v = 0; v < p; ++v) both += a.num_children(v) > 0 && b.num_children(v) > 0;
    EXPECT_EQ(both, p % 2 == 1 && p > 1 ? 1 : 0);
    for (int v = 1; v < p; v += 2) EXPECT_EQ(a.num_children(v), 0) << "odd ranks are leaves";
  }
}

TEST(CollectivePlanner, TreeCountsAndPerRankBytes) {
  for (int p : {2, 3, 5, 8, 13, 16}) {
    for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{MiB(40).count() + 3}}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " n=" + std::to_string(n));
      const GroupLayout l = flat(p);
      const CollectiveOptions o;
      const auto a = collective_detail::nccl_binary_tree(p);
      const auto b = collective_detail::second_tree(a);
      const int64_t h = a.root_height();
      const int64_t half = ceil_div(n, 2);
      const int64_t c = ceil_div(half, o.chunk_bytes.count());
      const int64_t s = ceil_div(half, c);
      const CollectivePlan plan = plan_collective(Op::kAllReduce, Algo::kTree, l, Bytes(n), o);
      // Exactly 2h + c - 1 steps: the last is the depth h-1 broadcast of chunk c-1.
      EXPECT_EQ(steps_of(plan), 2 * h + c - 1);
      EXPECT_LE(static_cast<int64_t>(plan.phases.size()), 4 * h);
      const Totals t = totals_of(plan);
      for (int v = 0; v < p; ++v) {
        int64_t edges = 0;
        for (const auto* tree : {&a, &b}) {
          edges += tree->num_children(v) + (tree->parent[static_cast<size_t>(v)] >= 0 ? 1 : 0);
        }
        const int rank = l.members[static_cast<size_t>(v)];
        EXPECT_EQ(get(t.sent, rank), edges * c * s);
        EXPECT_EQ(get(t.received, rank), edges * c * s);
      }
      for (Op op : {Op::kBroadcast, Op::kReduce}) {
        const int64_t cc = ceil_div(n, o.chunk_bytes.count());
        const CollectivePlan one = plan_collective(op, Algo::kTree, l, Bytes(n), o);
        EXPECT_EQ(steps_of(one), h + cc - 1);
        EXPECT_EQ(total(totals_of(one).sent), (p - 1) * cc * ceil_div(n, cc));
      }
    }
  }
}

TEST(CollectivePlanner, HalvingDoublingCounts) {
  for (int m = 1; m <= 5; ++m) {
    const int p = 1 << m;
    const int64_t n = 12345;
    const int64_t piece = ceil_div(n, p);
    const GroupLayout l = flat(p);
    const CollectivePlan ar =
        plan_collective(Op::kAllReduce, Algo::kHalvingDoubling, l, Bytes(n), {});
    EXPECT_EQ(steps_of(ar), 2 * m);
    EXPECT_EQ(static_cast<int>(ar.phases.size()), 2 * m - 1);  // last halving = first doubling
    EXPECT_EQ(ar.phases[0].transfers[0].bytes.count(), piece * p / 2);
    for (int r : l.members) EXPECT_EQ(get(totals_of(ar).sent, r), 2 * (p - 1) * piece);
    for (Op op : {Op::kReduceScatter, Op::kAllGather}) {
      const CollectivePlan plan = plan_collective(op, Algo::kHalvingDoubling, l, Bytes(n), {});
      EXPECT_EQ(steps_of(plan), m);
      EXPECT_EQ(static_cast<int>(plan.phases.size()), m);
      for (int r : l.members) EXPECT_EQ(get(totals_of(plan).received, r), (p - 1) * piece);
    }
  }
}

TEST(CollectivePlanner, TwoLevelCounts) {
  struct Shape {
    int regions, nodes, per_node;
  };
  for (Shape sh :
       {Shape{1, 1, 4}, Shape{1, 4, 1}, Shape{1, 3, 4}, Shape{2, 2, 2}, Shape{3, 2, 3}}) {
    const GroupLayout l = layout_of(sh.regions, sh.nodes, sh.per_node);
    const int64_t n = 100003;
    const int p = static_cast<int>(l.members.size());
    // (groups, members per group) for hierarchical (nodes) and cross_region (regions).
    for (auto [algo, groups] : {std::pair{Algo::kHierarchical, sh.regions * sh.nodes},
                                std::pair{Algo::kCrossRegion, sh.regions}}) {
      const int g = p / groups;
      const int64_t intra = ceil_div(n, g);
      const int64_t inter = ceil_div(n, p);
      SCOPED_TRACE(std::string(algorithm_name(algo)) + " N=" + std::to_string(groups) +
                   " g=" + std::to_string(g));
      const CollectivePlan ar = plan_collective(Op::kAllReduce, algo, l, Bytes(n), {});
      EXPECT_EQ(steps_of(ar), 2 * (g - 1) + 2 * (groups - 1));
      EXPECT_EQ(ar.phases.size(), (g > 1 && groups > 1) ? 3u : 1u);
      for (int r : l.members) {
        EXPECT_EQ(get(totals_of(ar).sent, r), 2 * (g - 1) * intra + 2 * (groups - 1) * inter);
      }
      const CollectivePlan rs = plan_collective(Op::kReduceScatter, algo, l, Bytes(n), {});
      const CollectivePlan ag = plan_collective(Op::kAllGather, algo, l, Bytes(n), {});
      EXPECT_EQ(steps_of(rs), (g - 1) + (groups - 1));
      EXPECT_EQ(steps_of(ag), (g - 1) + (groups - 1));
      for (int r : l.members) {
        EXPECT_EQ(get(totals_of(rs).sent, r), (g - 1) * intra + (groups - 1) * inter);
        EXPECT_EQ(get(totals_of(ag).received, r), (g - 1) * intra + (groups - 1) * inter);
      }
    }
  }
}

TEST(CollectivePlanner, HierarchicalDegeneratesToRing) {
  const CollectivePlan ring =
      plan_collective(Op::kAllReduce, Algo::kRing, layout_of(1, 1, 6), KiB(6), {});
  for (const GroupLayout& l : {layout_of(1, 1, 6), layout_of(1, 6, 1)}) {
    const CollectivePlan h = plan_collective(Op::kAllReduce, Algo::kHierarchical, l, KiB(6), {});
    ASSERT_EQ(h.phases.size(), 1u);
    EXPECT_EQ(h.phases[0].repeat, ring.phases[0].repeat);
    EXPECT_TRUE(collective_detail::same_transfers(h.phases[0].transfers, ring.phases[0].transfers));
  }
}

TEST(CollectivePlanner, Torus2DCounts) {
  for (auto [x, y] : std::vector<std::pair<int, int>>{{2, 4}, {4, 2}, {3, 5}, {1, 6}, {6, 1}}) {
    CollectiveOptions o;
    o.torus_x = x;
    o.torus_y = y;
    const int64_t n = 7777;
    const CollectivePlan plan =
        plan_collective(Op::kAllReduce, Algo::kTorus2D, flat(x * y), Bytes(n), o);
    EXPECT_EQ(steps_of(plan), 2 * (x - 1) + 2 * (y - 1));
    for (int r : flat(x * y).members) {
      EXPECT_EQ(get(totals_of(plan).sent, r),
                2 * (x - 1) * ceil_div(n, x) + 2 * (y - 1) * ceil_div(n, x * y));
    }
  }
  // Default grid: X = members per node (rows = nodes), Y = nodes.
  const CollectivePlan def =
      plan_collective(Op::kAllReduce, Algo::kTorus2D, layout_of(1, 3, 4), KiB(12), {});
  const CollectivePlan hier =
      plan_collective(Op::kAllReduce, Algo::kHierarchical, layout_of(1, 3, 4), KiB(12), {});
  ASSERT_EQ(def.phases.size(), hier.phases.size());
  for (size_t i = 0; i < def.phases.size(); ++i) {
    EXPECT_TRUE(
        collective_detail::same_transfers(def.phases[i].transfers, hier.phases[i].transfers));
  }
}

TEST(CollectivePlanner, DirectPatterns) {
  const GroupLayout l = flat(6);
  const CollectivePlan a2a = plan_collective(Op::kAllToAll, Algo::kDirect, l, Bytes(601), {});
  ASSERT_EQ(a2a.phases.size(), 1u);
  EXPECT_EQ(a2a.phases[0].repeat, 1);
  EXPECT_EQ(a2a.phases[0].transfers.size(), 30u);
  std::map<std::pair<int, int>, int> pairs;
  for (const Transfer& t : a2a.phases[0].transfers) {
    ++pairs[{t.src, t.dst}];
    EXPECT_EQ(t.bytes.count(), 101);
  }
  EXPECT_EQ(pairs.size(), 30u);
  const CollectivePlan sr = plan_collective(Op::kSendRecv, Algo::kDirect, l, KiB(3), {});
  ASSERT_EQ(sr.phases.size(), 1u);
  ASSERT_EQ(sr.phases[0].transfers.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const Transfer& t = sr.phases[0].transfers[k];
    EXPECT_EQ(t.src, l.members[2 * k]);
    EXPECT_EQ(t.dst, l.members[2 * k + 1]);
    EXPECT_EQ(t.bytes, KiB(3));
  }
}

TEST(CollectivePlanner, AppendPhaseMergesIdenticalSteps) {
  CollectivePlan plan;
  Phase a;
  a.transfers = {{0, 1, Bytes(5)}, {1, 0, Bytes(5)}};
  Phase b = a;
  b.repeat = 3;
  Phase c;
  c.transfers = {{0, 1, Bytes(6)}};
  collective_detail::append_phase(plan, a);
  collective_detail::append_phase(plan, b);
  collective_detail::append_phase(plan, Phase{});
  collective_detail::append_phase(plan, c);
  collective_detail::append_phase(plan, a);
  ASSERT_EQ(plan.phases.size(), 3u);
  EXPECT_EQ(plan.phases[0].repeat, 4);
  EXPECT_EQ(plan.phases[1].repeat, 1);
  EXPECT_EQ(plan.phases[2].repeat, 1);
}

TEST(CollectivePlanner, NvlsMovesEachSliceThroughTheSwitch) {
  GroupLayout l = flat(8);
  // Only where the members share a switch that reduces.
  EXPECT_THAT(applicability_error(Op::kAllReduce, Algo::kNvls, l, {}), HasSubstr("NVLink SHARP"));
  l.nvlink_sharp = true;
  EXPECT_EQ(applicability_error(Op::kAllReduce, Algo::kNvls, l, {}), "");
  EXPECT_THAT(applicability_error(Op::kReduceScatter, Algo::kNvls, l, {}),
              HasSubstr("does not implement"));
  // Reduce: the switch reads every slice from every GPU (n up) and returns each GPU its sum
  // (n/p down); multicast: each GPU stores its slice (n/p up) and receives all (n down).
  const int64_t n = MiB(8).count() + 3;
  const CollectivePlan plan = plan_collective(Op::kAllReduce, Algo::kNvls, l, Bytes(n), {});
  ASSERT_EQ(plan.phases.size(), 1u);
  const Totals t = totals_of(plan);
  for (int r : l.members) {
    EXPECT_EQ(get(t.sent, r), n + ceil_div(n, 8));
    EXPECT_EQ(get(t.received, r), n + ceil_div(n, 8));
  }
}

TEST(CollectivePlanner, RingsLeaveEveryNodeThroughEveryMemberOnItsRail) {
  // 3 nodes of 4: four rings, as NCCL's channels, each crossing between nodes from a member
  // to the member of the same local index, and each node's four exits distinct.
  GroupLayout l = layout_of(1, 3, 4);
  EXPECT_EQ(collective_detail::channel_rings(l).size(), 1u);  // the NICs are shared
  l.nic_per_member = true;
  const auto rings = collective_detail::channel_rings(l);
  ASSERT_EQ(rings.size(), 4u);
  std::map<int, std::set<int>> exits;  // node -> local index of the members leaving it
  int crossings = 0, same_rail = 0;
  for (const auto& ring : rings) {
    ASSERT_EQ(ring.size(), 12u);
    for (size_t a = 0; a < ring.size(); ++a) {
      const int from = ring[a], to = ring[(a + 1) % ring.size()];
      if (l.node_of[static_cast<size_t>(from)] == l.node_of[static_cast<size_t>(to)]) continue;
      ++crossings;
      exits[l.node_of[static_cast<size_t>(from)]].insert(from % 4);
      same_rail += from % 4 == to % 4 ? 1 : 0;
    }
  }
  EXPECT_EQ(crossings, 12);  // 3 per ring
  for (const auto& [node, locals] : exits) EXPECT_EQ(locals.size(), 4u) << node;
  // All but each ring's wrap from the last node to the first (3 nodes, 4 rails) stay on a rail.
  EXPECT_EQ(same_rail, 8);
  // A ring all-reduce moves the ring's bytes: every member 2(p-1) steps of a piece per ring.
  const CollectivePlan ar = plan_collective(Op::kAllReduce, Algo::kRing, l, MiB(3), {});
  const Totals t = totals_of(ar);
  for (int r : l.members) EXPECT_EQ(get(t.sent, r), 2 * 11 * 4 * ceil_div(MiB(3).count(), 48));
  // One node, or uneven nodes: the one ring in member order.
  EXPECT_EQ(collective_detail::channel_rings(flat(5)).size(), 1u);
}

TEST(CollectivePlanner, PlansStaySmallAt16384Ranks) {
  const GroupLayout l = layout_of(2, 1024, 8);
  ASSERT_EQ(l.members.size(), 16384u);
  GroupLayout railed = layout_of(1, 2048, 8);
  railed.nic_per_member = true;
  const CollectivePlan ring = plan_collective(Op::kAllReduce, Algo::kRing, railed, GiB(1), {});
  ASSERT_EQ(ring.phases.size(), 1u);
  EXPECT_EQ(ring.phases[0].repeat, 2 * 16383);
  // One ring per member of a node (channel_rings): 8 x 16,384 transfers in one phase.
  EXPECT_EQ(ring.phases[0].transfers.size(), 8u * 16384u);
  for (Algo a : {Algo::kHierarchical, Algo::kTorus2D}) {
    EXPECT_EQ(plan_collective(Op::kAllReduce, a, l, GiB(1), {}).phases.size(), 3u);
  }
  EXPECT_EQ(plan_collective(Op::kAllReduce, Algo::kCrossRegion, l, GiB(1), {}).phases.size(), 3u);
  EXPECT_EQ(plan_collective(Op::kAllReduce, Algo::kHalvingDoubling, l, GiB(1), {}).phases.size(),
            27u);
  const CollectivePlan tree = plan_collective(Op::kAllReduce, Algo::kTree, l, GiB(1), {});
  EXPECT_EQ(steps_of(tree), 2 * 14 + 128 - 1);
  EXPECT_LE(tree.phases.size(), 4u * 14);
  const CollectivePlan chain = plan_collective(Op::kBroadcast, Algo::kRing, l, MiB(64), {});
  EXPECT_EQ(steps_of(chain), 16383 + 16 - 1);
}

}  // namespace
}  // namespace dtsim
