// The collective library's latency per call: NCCL's ring formula, the hop paths of the
// other algorithms, its independence of the message size, and its place in estimate_time.
#include <gtest/gtest.h>

#include "sim/collectives/planner.h"

namespace dtsim {
namespace {

using Op = CollectiveOp;
using Algo = CollectiveAlgorithm;

GroupLayout nodes_of(int nodes, int per_node) {
  GroupLayout l;
  for (int i = 0; i < nodes * per_node; ++i) {
    l.members.push_back(i);
    l.node_of.push_back(i / per_node);
    l.region_of.push_back(0);
  }
  return l;
}

// NCCL 2.8-2.11's Simple-protocol figures (the catalog's GPUs).
const ProtocolLatency kNccl{Duration::ns(8400), Duration::ns(3400), Duration::ns(9600)};

Duration latency(Op op, Algo a, const GroupLayout& l, CollectiveOptions o = {},
                 Bytes bytes = Bytes(1 << 20)) {
  return protocol_latency(op, a, l, bytes, o, kNccl);
}

double us(Duration d) { return d.seconds() * 1e6; }

TEST(ProtocolLatency, RingIsNcclsFormula) {
  // 4 nodes of 8: p - 1 = 31 steps, of which nodes - 1 = 3 leave a node (NCCL's
  // tuning.cc: baseLat + (nsteps - nInterSteps) intraLat + nInterSteps interLat).
  const GroupLayout l = nodes_of(4, 8);
  EXPECT_NEAR(us(latency(Op::kAllReduce, Algo::kRing, l)), 8.4 + 2 * 28 * 3.4 + 2 * 3 * 9.6, 1e-9);
  EXPECT_NEAR(us(latency(Op::kAllGather, Algo::kRing, l)), 8.4 + 28 * 3.4 + 3 * 9.6, 1e-9);
  EXPECT_NEAR(us(latency(Op::kReduceScatter, Algo::kRing, l)), 8.4 + 28 * 3.4 + 3 * 9.6, 1e-9);
}

TEST(ProtocolLatency, PipelinedSoIndependentOfTheSize) {
  const GroupLayout l = nodes_of(4, 8);
  for (Algo a : {Algo::kRing, Algo::kTree}) {
    EXPECT_EQ(latency(Op::kAllReduce, a, l, {}, Bytes(1 << 10)),
              latency(Op::kAllReduce, a, l, {}, Bytes(int64_t{1} << 32)));
  }
}

TEST(ProtocolLatency, NothingToDoCostsNothing) {
  EXPECT_EQ(latency(Op::kAllReduce, Algo::kRing, nodes_of(4, 8), {}, Bytes(0)), Duration::zero());
  EXPECT_EQ(latency(Op::kAllReduce, Algo::kRing, nodes_of(1, 1)), Duration::zero());
}

TEST(ProtocolLatency, ChainStartsAtTheRoot) {
  // From member 5 around to member 4: the hops 7-8, 15-16, 23-24 and 31-0 leave a node.
  CollectiveOptions o;
  o.root = 5;
  EXPECT_NEAR(us(latency(Op::kBroadcast, Algo::kRing, nodes_of(4, 8), o)),
              8.4 + 27 * 3.4 + 4 * 9.6, 1e-9);
}

TEST(ProtocolLatency, TreeIsItsDeepestPath) {
  // One node of 8: NCCL's binary tree is 3 deep, up and down again for all-reduce.
  EXPECT_NEAR(us(latency(Op::kAllReduce, Algo::kTree, nodes_of(1, 8))), 8.4 + 2 * 3 * 3.4, 1e-9);
  // Across nodes the path crosses the network where the tree does: more than on one node,
  // far less than a ring's 2(p-1) steps.
  const double across = us(latency(Op::kAllReduce, Algo::kTree, nodes_of(64, 1)));
  EXPECT_NEAR(across, 8.4 + 2 * 6 * 9.6, 1e-9);
  EXPECT_LT(across, us(latency(Op::kAllReduce, Algo::kRing, nodes_of(64, 1))) / 5);
}

TEST(ProtocolLatency, OtherAlgorithmsCountTheirHops) {
  const GroupLayout l = nodes_of(4, 8);
  // Partners at distance 1, 2, 4 share a node; 8 and 16 do not.
  EXPECT_NEAR(us(latency(Op::kAllReduce, Algo::kHalvingDoubling, l)),
              8.4 + 2 * (3 * 3.4 + 2 * 9.6), 1e-9);
  // An intra ring of 8 and an inter ring of 4, twice each.
  EXPECT_NEAR(us(latency(Op::kAllReduce, Algo::kHierarchical, l)), 8.4 + 2 * (7 * 3.4 + 3 * 9.6),
              1e-9);
  EXPECT_NEAR(us(latency(Op::kAllToAll, Algo::kDirect, l)), 8.4 + 9.6, 1e-9);
  EXPECT_NEAR(us(latency(Op::kAllToAll, Algo::kDirect, nodes_of(1, 8))), 8.4 + 3.4, 1e-9);
}

TEST(ProtocolLatency, EstimatesIncludeIt) {
  const GroupLayout l = nodes_of(4, 8);
  AlphaBeta ab;
  ab.intra_node_alpha = Duration::us(1);
  ab.intra_node_bw = Bandwidth::gb_per_s(200);
  ab.inter_node_alpha = Duration::us(5);
  ab.inter_node_bw = Bandwidth::gb_per_s(25);
  ab.inter_region_alpha = Duration::us(5);
  ab.inter_region_bw = Bandwidth::gb_per_s(25);
  AlphaBeta with = ab;
  with.protocol = kNccl;
  for (Algo a : {Algo::kRing, Algo::kTree, Algo::kHierarchical}) {
    const Bytes n(64 << 20);
    EXPECT_EQ(estimate_time(Op::kAllReduce, a, l, n, {}, with) -
                  estimate_time(Op::kAllReduce, a, l, n, {}, ab),
              protocol_latency(Op::kAllReduce, a, l, n, {}, kNccl));
  }
}

}  // namespace
}  // namespace dtsim
