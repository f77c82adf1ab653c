// Every collective algorithm, simulated with the `flow` model on a topology where its
// transfers do not contend, against its alpha-beta closed form (within 1%); conservation
// of bytes through the network; and two collectives sharing a link.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "sim/collectives/planner.h"
#include "sim/simulation.h"
#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using testing::fabric;
using testing::node_group;
using testing::one_region;

struct Measured {
  double seconds = 0;
  int64_t steps = 0;
  double injected = 0;   // bytes leaving devices
  double delivered = 0;  // bytes arriving at devices
  double planned = 0;    // bytes in the plan's transfers (times repeats)
  double library = 0;    // the collective library's latency (protocol_latency_test checks it)
};

// Runs one collective over `members` and measures it.
Measured run_one(const Cluster& c, CollectiveOp op, CollectiveAlgorithm algo, std::vector<int> members,
                 Bytes bytes, CollectiveOptions options = {}, const char* model = "flow") {
  TaskGraph g;
  g.add_collective_with_tasks(CollectiveCall{op, algo, members, bytes, options, "c"}, g.stream("comm"));
  SimulationOptions so;
  so.network_model = model;
  Simulation sim(c, so);
  const RunResult r = sim.run(g);
  EXPECT_TRUE(r.stalled.empty());
  Measured m;
  m.seconds = (r.collectives.at(0).end - r.collectives.at(0).start).seconds();
  m.steps = r.collectives.at(0).steps;
  const auto& topo = c.topology;
  for (LinkId l = 0; l < topo.num_links(); ++l) {
    const double b = sim.network().link_stats().stats(l).bytes;
    if (topo.vertex(topo.link(l).src).kind == VertexKind::kDevice) m.injected += b;
    if (topo.vertex(topo.link(l).dst).kind == VertexKind::kDevice) m.delivered += b;
  }
  const CollectivePlan plan = plan_collective(op, r.collectives[0].algorithm, sim.layout_of(members),
                                              bytes, options);
  const GroupLayout layout = sim.layout_of(members);
  m.library =
      protocol_cost(op, r.collectives[0].algorithm, layout, bytes, options, sim.alpha_beta(layout))
          .seconds();
  for (const Phase& p : plan.phases) {
    for (const Transfer& t : p.transfers) {
      if (t.src != t.dst) m.planned += t.bytes.as_double() * static_cast<double>(p.repeat);
    }
  }
  return m;
}

std::vector<int> iota(int n, int first = 0) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// alpha + bytes / B for one step of `bytes`.
double step(double alpha_s, double bytes, double bw) { return alpha_s + bytes / bw; }

// `expected` covers the transfers; the library's latency comes before them.
void expect_close(const Measured& m, double expected) {
  EXPECT_GT(m.library, 0);  // catalog GPUs pay NCCL's latency
  EXPECT_NEAR(m.seconds - m.library, expected, 0.01 * expected) << "simulated " << m.seconds << " s";
  // Conservation: whatever the plan sends enters and leaves the network exactly once.
  EXPECT_NEAR(m.injected, m.planned, 1e-6 * m.planned + 1);
  EXPECT_NEAR(m.delivered, m.planned, 1e-6 * m.planned + 1);
}

// 8 x H100 on one NVSwitch: every device has its own up and down link (450 GB/s), a
// device-to-device route is 2 hops of 500 ns.
class NvSwitchNode : public ::testing::Test {
 protected:
  Cluster c = build_cluster(one_region(node_group(1, 8, "H100", 8), fabric(FabricKind::kNone)));
  const double a = 1e-6, B = 450e9;
  const int p = 8;
  const double n = 256.0 * (1 << 20);
};

TEST_F(NvSwitchNode, RingAllReduce) {
  // 2(p-1) (alpha + n/p / B), after the catalog H100's NCCL latency: at 256 MiB the Simple
  // protocol, 8.4 us per call and 3.4 us per NVLink step.
  const Measured m =
      run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, iota(p), Bytes(n));
  expect_close(m, 2 * (p - 1) * step(a, n / p, B));
  EXPECT_NEAR(m.library, 8.4e-6 + 2 * (p - 1) * 3.4e-6, 1e-12);
}

TEST_F(NvSwitchNode, RingReduceScatterAndAllGather) {
  for (CollectiveOp op : {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
    expect_close(run_one(c, op, CollectiveAlgorithm::kRing, iota(p), Bytes(n)),
                 (p - 1) * step(a, n / p, B));
  }
}

TEST_F(NvSwitchNode, ChainBroadcastAndReducePipelineChunks) {
  // c = n / 4 MiB chunks; (p - 1) + (c - 1) steps of one chunk.
  const double chunk = 4 << 20, chunks = n / chunk;
  for (CollectiveOp op : {CollectiveOp::kBroadcast, CollectiveOp::kReduce}) {
    expect_close(run_one(c, op, CollectiveAlgorithm::kRing, iota(p), Bytes(n)),
                 (p - 1 + chunks - 1) * step(a, chunk, B));
  }
}

TEST_F(NvSwitchNode, SendRecvPairs) {
  expect_close(run_one(c, CollectiveOp::kSendRecv, CollectiveAlgorithm::kDirect, iota(p), Bytes(n)),
               step(a, n, B));
}

// 8 x H100 with a direct NVLink between every pair (450 GB/s / 7 each, one 500 ns hop):
// algorithms that talk to several peers at once do not contend here.
class NvLinkMesh : public ::testing::Test {
 protected:
  Cluster make() {
    auto spec = one_region(node_group(1, 8, "H100", 8), fabric(FabricKind::kNone));
    spec.regions[0].node_groups[0].intra = IntraNodeKind::kNvLinkMesh;
    return build_cluster(spec);
  }
  Cluster c = make();
  const double a = 0.5e-6, B = 450e9 / 7;
  const int p = 8;
  const double n = 64.0 * (1 << 20);
};

TEST_F(NvLinkMesh, HalvingDoublingAllReduce) {
  // log2 p halving steps of n/2, n/4, n/8 then the same doubling back:
  // 2 log2(p) alpha + 2 (p-1)/p n / B.
  expect_close(run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kHalvingDoubling, iota(p),
                       Bytes(n)),
               2 * 3 * a + 2.0 * (p - 1) / p * n / B);
}

TEST_F(NvLinkMesh, HalvingDoublingReduceScatter) {
  expect_close(run_one(c, CollectiveOp::kReduceScatter, CollectiveAlgorithm::kHalvingDoubling,
                       iota(p), Bytes(n)),
               3 * a + (p - 1.0) / p * n / B);
}

// Largest number of transfers of one phase between the same ordered pair: on the mesh
// those share one link.
int max_pair_load(const Phase& phase) {
  std::map<std::pair<int, int>, int> load;
  int most = 0;
  for (const Transfer& t : phase.transfers) most = std::max(most, ++load[{t.src, t.dst}]);
  return most;
}

TEST_F(NvLinkMesh, DoubleBinaryTreeAllReduce) {
  // Each tree carries n/2 in c = ceil(n/2 / 4 MiB) chunks of s; the plan has 2h + c - 1
  // steps (checked by the planner tests). In the steady state a pair of ranks can be a
  // tree-A edge going up and a tree-B edge going down at once: those two chunks share the
  // pair's link. So each step costs alpha + k s / B, with k the most chunks on one link.
  const double chunks = std::ceil(n / 2 / (4 << 20)), s = n / 2 / chunks;
  const Measured m = run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, iota(p), Bytes(n));
  GroupLayout layout{iota(p), std::vector<int>(p, 0), std::vector<int>(p, 0)};
  const CollectivePlan plan = plan_collective(CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree,
                                              layout, Bytes(n), {});
  double expected = 0;
  for (const Phase& ph : plan.phases) expected += ph.repeat * step(a, max_pair_load(ph) * s, B);
  expect_close(m, expected);
  EXPECT_GE(m.steps, static_cast<int64_t>(chunks) + 2 * 2);  // h >= 2 for 8 ranks
}

TEST_F(NvLinkMesh, TreeBroadcast) {
  const double chunks = n / (4 << 20), s = 4 << 20;
  const Measured m = run_one(c, CollectiveOp::kBroadcast, CollectiveAlgorithm::kTree, iota(p), Bytes(n));
  expect_close(m, static_cast<double>(m.steps) * step(a, s, B));
  EXPECT_GE(m.steps, static_cast<int64_t>(chunks) + 1);
}

TEST_F(NvLinkMesh, DirectAllToAll) {
  // One phase: every ordered pair exchanges n/p on its own link.
  expect_close(run_one(c, CollectiveOp::kAllToAll, CollectiveAlgorithm::kDirect, iota(p), Bytes(n)),
               step(a, n / p, B));
}

// 4 nodes x 4 H100 (NVSwitch), 4 rails on a rail-optimized fabric: intra-node rings use
// NVLink; the inter-node rings of each local index use their own rail.
class FourByFour : public ::testing::Test {
 protected:
  Cluster make() {
    FabricSpec f = fabric(FabricKind::kRailOptimized);
    f.nodes_per_group = 4;
    return build_cluster(one_region(node_group(4, 4, "H100", 4, 400), f));
  }
  Cluster c = make();
  Router router{c.topology};
  double alpha(int a, int b) { return router.route_latency(c.devices[a].vertex, c.devices[b].vertex).seconds(); }
  double bw(int a, int b) {
    return router.route_bottleneck(c.devices[a].vertex, c.devices[b].vertex).bytes_per_second();
  }
  const double n = 256.0 * (1 << 20);
};

TEST_F(FourByFour, HierarchicalAllReduce) {
  // RS in each node (g-1 steps of n/g), AR across the N nodes on each rail (2(N-1) steps
  // of n/g/N), AG in each node (g-1 steps of n/g).
  const double g = 4, N = 4;
  const double intra = (g - 1) * step(alpha(0, 1), n / g, bw(0, 1));
  const double inter = 2 * (N - 1) * step(alpha(0, 4), n / g / N, bw(0, 4));
  expect_close(run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kHierarchical, iota(16), Bytes(n)),
               2 * intra + inter);
}

TEST_F(FourByFour, Torus2DAllReduceOnAFourByFourGrid) {
  // Mikami et al.: RS along X (the 4 GPUs of a node), AR along Y (the same local index on
  // the 4 nodes) of n/X, AG along X.
  const double X = 4, Y = 4;
  const double horizontal = (X - 1) * step(alpha(0, 1), n / X, bw(0, 1));
  const double vertical = 2 * (Y - 1) * step(alpha(0, 4), n / X / Y, bw(0, 4));
  expect_close(run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kTorus2D, iota(16), Bytes(n)),
               2 * horizontal + vertical);
}

TEST_F(FourByFour, RingAcrossNodesOnOneRail) {
  // Local index 0 of each node: one rail, no contention.
  const std::vector<int> rail0{0, 4, 8, 12};
  expect_close(run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, rail0, Bytes(n)),
               2 * 3 * step(alpha(0, 4), n / 4, bw(0, 4)));
}

TEST(CrossRegion, HierarchicalOverAWan) {
  // Two regions of one node x 4 A100 joined by a 10 Gbps, 30 ms WAN. RS inside each region,
  // AR across regions: 4 rings (one per local index) share the WAN, so each gets W/4;
  // AG inside each region.
  const Cluster c = build_cluster(testing::two_regions({"a", "b"}, node_group(1, 4, "A100-80GB", 4, 200),
                                                       Bandwidth::gbps(10), Duration::ms(30)));
  Router router(c.topology);
  const double n = 64.0 * (1 << 20), g = 4, R = 2;
  const double ai = router.route_latency(c.devices[0].vertex, c.devices[1].vertex).seconds();
  const double bi = router.route_bottleneck(c.devices[0].vertex, c.devices[1].vertex).bytes_per_second();
  const double aw = router.route_latency(c.devices[0].vertex, c.devices[4].vertex).seconds();
  const double W = 10e9 / 8;
  const double expected = 2 * (g - 1) * step(ai, n / g, bi) + 2 * (R - 1) * step(aw, n / g / R, W / g);
  expect_close(run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kCrossRegion, iota(8), Bytes(n)),
               expected);
  // A flat ring crosses the WAN with one flow each way per step, each at the full W:
  // 14 steps of (alpha_wan + n/8 / W), the slowest member of every step.
  expect_close(run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, iota(8), Bytes(n)),
               2 * 7 * step(aw, n / 8, W));
}

TEST(Contention, TwoCollectivesSharingANicEachGetHalf) {
  // 2 nodes x 2 GPUs with one 100 Gbps NIC per node. Group A = local index 0 of both nodes,
  // group B = local index 1: their rings cross the same NICs at the same time.
  const Cluster c = build_cluster(one_region(node_group(2, 2, "A100-80GB", 1, 100),
                                             fabric(FabricKind::kSingleSwitch)));
  Router router(c.topology);
  const double a = router.route_latency(c.devices[0].vertex, c.devices[2].vertex).seconds();
  const double B = 100e9 / 8, n = 128.0 * (1 << 20);

  const Measured alone = run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {0, 2}, Bytes(n));
  expect_close(alone, 2 * step(a, n / 2, B));

  TaskGraph g;
  const uint16_t s = g.stream("comm");
  for (std::vector<int> members : {std::vector<int>{0, 2}, std::vector<int>{1, 3}}) {
    g.add_collective_with_tasks(CollectiveCall{CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing,
                                               members, Bytes(n), {}, "ar"}, s);
  }
  Simulation sim(c, {});
  const RunResult r = sim.run(g);
  ASSERT_EQ(r.collectives.size(), 2u);
  for (const CollectiveRecord& rec : r.collectives) {
    // Each ring gets half of every NIC: 2 steps of (alpha + n/2 / (B/2)).
    const double t = (rec.end - rec.start).seconds();
    EXPECT_NEAR(t, 2 * step(a, n / 2, B / 2), 0.01 * t);
  }
}

TEST(NetworkModels, AnalyticalAndFlowAgreeWithoutContention) {
  const Cluster c = build_cluster(one_region(node_group(1, 8, "H100", 8), fabric(FabricKind::kNone)));
  const Bytes n = MiB(64);
  const auto flow = run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, iota(8), n);
  const auto ab = run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, iota(8), n, {}, "analytical");
  EXPECT_NEAR(flow.seconds, ab.seconds, 1e-9);
}

TEST(NetworkModels, MoreBandwidthNeverSlowsTheAnalyticalModel) {
  double previous = 1e300;
  for (double gbps : {25.0, 50.0, 100.0, 200.0, 400.0}) {
    FabricSpec f = fabric(FabricKind::kFatTree);
    f.nodes_per_leaf = 2;
    const Cluster c = build_cluster(one_region(node_group(8, 1, "A100-80GB", 1, gbps), f));
    const double t = run_one(c, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, iota(8), MiB(32), {},
                             "analytical").seconds;
    EXPECT_LE(t, previous);
    previous = t;
  }
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// Runs `g` with every round simulated and with fast-forward, and checks that every
// collective ends at the same nanosecond and every link carries the same bytes. Returns
// the two results (without, with).
std::pair<RunResult, RunResult> run_with_and_without_fast_forward(const Cluster& c,
                                                                  const TaskGraph& g,
                                                                  const std::string& context) {
  RunResult results[2];
  std::vector<double> bytes[2];
  for (int ff = 0; ff < 2; ++ff) {
    SimulationOptions o;
    o.fast_forward = ff == 1;
    Simulation sim(c, o);
    results[ff] = sim.run(g);
    for (LinkId l = 0; l < c.topology.num_links(); ++l) {
      bytes[ff].push_back(sim.network().link_stats().stats(l).bytes);
    }
  }
  EXPECT_EQ(results[0].collectives.size(), results[1].collectives.size()) << context;
  for (size_t i = 0; i < std::min(results[0].collectives.size(), results[1].collectives.size()); ++i) {
    EXPECT_EQ(results[0].collectives[i].end, results[1].collectives[i].end)
        << context << " collective " << i;
  }
  for (size_t l = 0; l < bytes[0].size(); ++l) {
    EXPECT_NEAR(bytes[0][l], bytes[1][l], 1e-6 * bytes[0][l] + 1) << context << " link " << l;
  }
  return {std::move(results[0]), std::move(results[1])};
}

// Fast-forward is an exact shortcut: with it off, every round is simulated flow by flow,
// and every collective must end at the same nanosecond with the same link traffic.
TEST(FastForward, ChangesNothingButTheWork) {
  const Cluster c = testing::small_oversubscribed_fat_tree();
  TaskGraph g;
  const uint16_t s = g.stream("comm");
  for (auto algo : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree,
                    CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kHalvingDoubling}) {
    for (Bytes n : {KiB(64), MiB(48)}) {
      g.add_collective_with_tasks(CollectiveCall{CollectiveOp::kAllReduce, algo, iota(32), n, {}, "ar"}, s);
    }
  }
  const auto [slow, fast] = run_with_and_without_fast_forward(c, g, "");
  EXPECT_EQ(slow.fast_forwarded_rounds, 0);
  EXPECT_GT(fast.fast_forwarded_rounds, 0);
  EXPECT_LT(fast.events, slow.events);
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// Two rings that run at once on separate rails end their rounds at the same instants and
// never share a link: they are fast-forwarded together, and the result is exactly that of
// simulating every round. A third collective sharing a NIC with one of them keeps that
// pair stepping round by round, still exactly.
TEST(FastForward, ConcurrentCollectivesOnDisjointLinksSkipTogether) {
  FabricSpec f = fabric(FabricKind::kRailOptimized);
  f.nodes_per_group = 4;
  const Cluster c = build_cluster(one_region(node_group(4, 2, "H100", 2, 400), f));
  auto graph = [](bool third) {
    TaskGraph g;
    const uint16_t s = g.stream("comm");
    for (std::vector<int> rail : {std::vector<int>{0, 2, 4, 6}, std::vector<int>{1, 3, 5, 7}}) {
      g.add_collective_with_tasks(
          CollectiveCall{CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, rail, MiB(64), {}, "ar"}, s);
    }
    if (third) {
      // Ranks 0 and 2 again, on another stream: shares rail 0 with the first ring.
      g.add_collective_with_tasks(
          CollectiveCall{CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {0, 2}, MiB(16), {}, "x"},
          g.stream("other"));
    }
    return g;
  };
  for (bool third : {false, true}) {
    const auto [slow, fast] =
        run_with_and_without_fast_forward(c, graph(third), third ? "third" : "two rings");
    if (!third) {
      EXPECT_GT(fast.fast_forwarded_rounds, 0);
    }
  }
}

}  // namespace
}  // namespace dtsim
