// The collective library's cost per call: NCCL's ring formula, the hop paths of the other
// algorithms, its independence of the message size, the choice of protocol by size, and
// its place in estimate_time.
#include <gtest/gtest.h>

#include <utility>

#include "sim/collectives/planner.h"
#include "tests/sim/alpha_beta_figures.h"

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

// NCCL 2.8-2.11's ring figures (the catalog's NVLink GPUs): LL, LL128, Simple.
const ProtocolCosts kLL{Duration::ns(3600), Duration::ns(470), Duration::ns(2700), 0.25};
const ProtocolCosts kLL128{Duration::ns(10000), Duration::ns(1900), Duration::ns(4000), 0.92};
const ProtocolCosts kNccl{Duration::ns(8400), Duration::ns(3400), Duration::ns(9600), 1.0};
const ProtocolTable kTable{kLL, kLL128, kNccl};

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


TEST(ProtocolChoice, SmallCallsTakeLowLatencyProtocolsLargeOnesSimple) {
  const GroupLayout l = nodes_of(1, 8);
  const AlphaBeta ab = testing::cluster_figures();
  auto choice = [&](Bytes n) {
    const Duration transfer = estimate_bandwidth_time(Op::kAllReduce, Algo::kRing, l, n, {}, ab);
    return std::pair{choose_protocol(Op::kAllReduce, Algo::kRing, l, n, {}, kTable, transfer),
                     transfer};
  };
  // 8 bytes: LL, its latency and 3x the (tiny) bandwidth time on top (a quarter of the rate).
  const auto [tiny, tiny_transfer] = choice(Bytes(8));
  EXPECT_EQ(tiny.protocol, CollectiveProtocol::kLL);
  EXPECT_NEAR(us(tiny.cost), 3.6 + 14 * 0.47 + 3 * us(tiny_transfer), 1e-3);
  // 1 GiB: Simple, its latency alone.
  const auto [large, large_transfer] = choice(Bytes(int64_t{1} << 30));
  EXPECT_EQ(large.protocol, CollectiveProtocol::kSimple);
  EXPECT_NEAR(us(large.cost), 8.4 + 14 * 3.4, 1e-9);
  // In between, LL128 wins somewhere: the cost never exceeds Simple's latency.
  bool saw_ll128 = false;
  for (int64_t n = 1 << 10; n <= int64_t{1} << 30; n *= 2) {
    const auto [c, t] = choice(Bytes(n));
    saw_ll128 |= c.protocol == CollectiveProtocol::kLL128;
    EXPECT_LE(c.cost, protocol_latency(Op::kAllReduce, Algo::kRing, l, Bytes(n), {}, kNccl));
  }
  EXPECT_TRUE(saw_ll128);
}

TEST(ProtocolChoice, OnlyProtocolsInUse) {
  const GroupLayout l = nodes_of(1, 8);
  ProtocolTable simple_only{};
  simple_only[static_cast<size_t>(CollectiveProtocol::kSimple)] = kNccl;
  const ProtocolChoice c = choose_protocol(Op::kAllReduce, Algo::kRing, l, Bytes(8), {},
                                           simple_only, Duration::us(1));
  EXPECT_EQ(c.protocol, CollectiveProtocol::kSimple);
  EXPECT_NEAR(us(c.cost), 8.4 + 14 * 3.4, 1e-9);
  // No protocol: nothing added.
  EXPECT_EQ(choose_protocol(Op::kAllReduce, Algo::kRing, l, Bytes(8), {}, ProtocolTable{},
                            Duration::us(1))
                .cost,
            Duration::zero());
}

TEST(ProtocolLatency, EstimatesIncludeIt) {
  const GroupLayout l = nodes_of(4, 8);
  const AlphaBeta ab = testing::cluster_figures();
  AlphaBeta with = ab;
  with.protocols = kTable;
  for (Algo a : {Algo::kRing, Algo::kTree, Algo::kHierarchical}) {
    for (Bytes n : {Bytes(64), Bytes(64 << 20)}) {
      const Duration transfer = estimate_transfer_time(Op::kAllReduce, a, l, n, {}, ab);
      const Duration bandwidth = estimate_bandwidth_time(Op::kAllReduce, a, l, n, {}, ab);
      EXPECT_LT(bandwidth, transfer);  // the alphas are left out
      EXPECT_EQ(estimate_time(Op::kAllReduce, a, l, n, {}, ab), transfer);
      EXPECT_EQ(estimate_time(Op::kAllReduce, a, l, n, {}, with),
                transfer + choose_protocol(Op::kAllReduce, a, l, n, {}, kTable, bandwidth).cost);
    }
  }
}

}  // namespace
}  // namespace dtsim
