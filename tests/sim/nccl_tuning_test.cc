// NCCL's tuning model as dtsim transcribes it: latencies and bandwidths worked by hand from
// NCCL 2.30.7's tables, the pair it picks, and auto on a group that runs NCCL.
#include "sim/collectives/nccl_tuning.h"

#include <gtest/gtest.h>

#include "sim/group_links.h"
#include "sim/router.h"
#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using Op = CollectiveOp;
using Algo = CollectiveAlgorithm;
using Proto = CollectiveProtocol;

// `nodes` nodes of `per_node` GPUs of compute capability `cc` on NVLink; 360 GB/s inside a
// node (H100's 450 x 0.8), 50 GB/s per GPU between nodes; NVLink SHARP when asked.
struct Group {
  GroupLayout layout;
  AlphaBeta ab;
};
Group group(int nodes, int per_node, int cc, bool sharp = false) {
  Group g;
  for (int i = 0; i < nodes * per_node; ++i) {
    g.layout.members.push_back(i);
    g.layout.node_of.push_back(i / per_node);
    g.layout.region_of.push_back(0);
  }
  g.layout.nvlink_sharp = sharp && nodes == 1;
  g.ab.intra_node_bw = Bandwidth::gb_per_s(360);
  g.ab.inter_node_bw = g.ab.inter_region_bw = Bandwidth::gb_per_s(nodes > 1 ? 50 : 360);
  g.ab.protocols = nccl_ring_protocols(true, true);
  g.ab.nccl = NcclGroup{
      .graph_channels = 12, .compute_capability = cc, .mixed_architectures = false, .nvlink = true};
  return g;
}

double us(std::optional<Duration> d) { return d ? d->seconds() * 1e6 : -1; }

TEST(NcclTuning, LatenciesOfOneNodeAsNcclWorksThem) {
  // At zero bytes the model's time is its latency: 8 GPUs on NVLink, all-reduce.
  const Group g = group(1, 8, 90, true);
  const auto t = [&](Algo a, Proto p) {
    return us(nccl_model_time(Op::kAllReduce, a, p, g.layout, Bytes(0), g.ab));
  };
  // Ring: base + 2(p-1) NVLink steps. Tree: base + 2 (ppn-1) steps. NVLS: its 25 us.
  EXPECT_NEAR(t(Algo::kRing, Proto::kLL), 6.6 + 14 * 0.6, 1e-3);
  EXPECT_NEAR(t(Algo::kRing, Proto::kLL128), 14.0 + 14 * 1.9, 1e-3);
  EXPECT_NEAR(t(Algo::kRing, Proto::kSimple), 8.4 + 14 * 3.4, 1e-3);
  EXPECT_NEAR(t(Algo::kTree, Proto::kLL), 6.8 + 14 * 0.6, 1e-3);
  EXPECT_NEAR(t(Algo::kTree, Proto::kLL128), 14.0 + 14 * 1.25, 1e-3);
  EXPECT_NEAR(t(Algo::kTree, Proto::kSimple), 8.4 + 14 * 4.0, 1e-3);
  EXPECT_NEAR(t(Algo::kNvls, Proto::kSimple), 25.0, 1e-3);
  // NVLS runs Simple only, all-reduce only; the tree all-reduce only.
  EXPECT_LT(t(Algo::kNvls, Proto::kLL), 0);
  EXPECT_FALSE(
      nccl_model_time(Op::kAllGather, Algo::kNvls, Proto::kSimple, g.layout, MiB(1), g.ab));
  EXPECT_FALSE(
      nccl_model_time(Op::kAllGather, Algo::kTree, Proto::kSimple, g.layout, MiB(1), g.ab));
  EXPECT_FALSE(nccl_model_time(Op::kAllReduce, Algo::kHalvingDoubling, Proto::kSimple, g.layout,
                               MiB(1), g.ab));
}

TEST(NcclTuning, BandwidthsOfOneNodeAsNcclWorksThem) {
  const Group g = group(1, 8, 90, true);
  const Bytes gib = GiB(1);
  const double n = static_cast<double>(gib.count());
  // Ring Simple: bus bandwidth 360 GB/s, algorithm bandwidth 360 x 8/14.
  EXPECT_NEAR(us(nccl_model_time(Op::kAllReduce, Algo::kRing, Proto::kSimple, g.layout, gib, g.ab)),
              56.0 + n / (1000 * 360.0 * 8 / 14), 0.01);
  // LL128: 0.92 of it, within its per-channel cap (12 x 36.7 GB/s on Hopper).
  EXPECT_NEAR(us(nccl_model_time(Op::kAllReduce, Algo::kRing, Proto::kLL128, g.layout, gib, g.ab)),
              40.6 + n / (1000 * 360.0 * 0.92 * 8 / 14), 0.01);
  // LL: half, capped at 141 GB/s on one Hopper node.
  EXPECT_NEAR(us(nccl_model_time(Op::kAllReduce, Algo::kRing, Proto::kLL, g.layout, gib, g.ab)),
              15.0 + n / (1000 * 141.0 * 8 / 14), 0.01);
  // NVLS: 360 x 0.85 (Hopper) x 7/8 (heads) x 2 (all-reduce), then x 8/14.
  EXPECT_NEAR(us(nccl_model_time(Op::kAllReduce, Algo::kNvls, Proto::kSimple, g.layout, gib, g.ab)),
              25.0 + n / (1000 * 360.0 * 0.85 * 7 / 8 * 2 * 8 / 14), 0.01);
  // Reduce-scatter on the ring: n / (n - 1) of the bus bandwidth, p - 1 steps.
  EXPECT_NEAR(
      us(nccl_model_time(Op::kReduceScatter, Algo::kRing, Proto::kSimple, g.layout, gib, g.ab)),
      8.4 + 7 * 3.4 + n / (1000 * 360.0 * 8 / 7), 0.01);
}

TEST(NcclTuning, PicksAsNcclDoes) {
  // One H100 node: LL rings for small calls, NVLS for large all-reduces; rings for the rest.
  const Group h100 = group(1, 8, 90, true);
  const auto pick = [](Op op, const Group& g, Bytes b) {
    return nccl_choice(op, g.layout, b, g.ab);
  };
  EXPECT_EQ(pick(Op::kAllReduce, h100, KiB(4)).algorithm, Algo::kRing);
  EXPECT_EQ(pick(Op::kAllReduce, h100, KiB(4)).protocol, Proto::kLL);
  EXPECT_EQ(pick(Op::kAllReduce, h100, GiB(1)).algorithm, Algo::kNvls);
  EXPECT_EQ(pick(Op::kReduceScatter, h100, GiB(1)).algorithm, Algo::kRing);
  EXPECT_EQ(pick(Op::kReduceScatter, h100, GiB(1)).protocol, Proto::kSimple);
  EXPECT_EQ(pick(Op::kBroadcast, h100, MiB(64)).algorithm, Algo::kRing);
  // An A100 node has no NVLink SHARP: Simple rings for large all-reduces.
  const Group a100 = group(1, 8, 80);
  EXPECT_EQ(pick(Op::kAllReduce, a100, GiB(1)).algorithm, Algo::kRing);
  EXPECT_EQ(pick(Op::kAllReduce, a100, GiB(1)).protocol, Proto::kSimple);
  // 64 nodes of 8: the tree's log2 of the nodes beats the ring's 2 x 63 network steps for a
  // small all-reduce.
  EXPECT_EQ(pick(Op::kAllReduce, group(64, 8, 80), KiB(64)).algorithm, Algo::kTree);
  // Only the algorithm asked for: ring's best protocol for 1 GiB is Simple.
  EXPECT_EQ(nccl_choice(Op::kAllReduce, h100.layout, GiB(1), h100.ab, Algo::kRing).protocol,
            Proto::kSimple);
  EXPECT_THROW(nccl_choice(Op::kAllGather, h100.layout, GiB(1), h100.ab, Algo::kTree),
               std::invalid_argument);
  // Negative sizes are not a call.
  EXPECT_FALSE(
      nccl_model_time(Op::kAllReduce, Algo::kRing, Proto::kLL, h100.layout, Bytes(-1), h100.ab));
}

TEST(NcclTuning, AcrossNodesTheBandwidthIsTheMembersNics) {
  // 4 nodes of 8 H100, 50 GB/s NICs. With a NIC per GPU the ring's channels use all 8 of a
  // node's: 400 GB/s, capped by NVLink's 360; with one NIC per node, 50.
  Group railed = group(4, 8, 90);
  railed.layout.nic_per_member = true;
  Group shared = group(4, 8, 90);
  const Bytes gib = GiB(1);
  const double n = static_cast<double>(gib.count());
  const auto ring = [&](const Group& g) {
    return us(nccl_model_time(Op::kAllReduce, Algo::kRing, Proto::kSimple, g.layout, gib, g.ab));
  };
  // Latency: of the 62 steps, 56 NVLink steps at max(3.4, 3 x 1 us) and 6 network steps
  // of 14 us, x 1.4 ("plateau" of a Simple ring across nodes).
  const double lat = (8.4 + 56 * 3.4 + 6 * 14.0) * 1.4;
  EXPECT_NEAR(ring(railed), lat + n / (1000 * 360.0 * 32 / 62), 0.01);
  EXPECT_NEAR(ring(shared), lat + n / (1000 * 50.0 * 32 / 62), 0.01);
  // A large all-reduce takes the Simple ring where the NICs are many, and LL128 (cheaper
  // network steps at 0.92 of the bandwidth) where one NIC makes bandwidth scarce anyway.
  EXPECT_EQ(nccl_choice(Op::kAllReduce, railed.layout, gib, railed.ab).protocol, Proto::kSimple);
}

TEST(NcclTuning, LL128NeedsOneArchitectureBeforeHopper) {
  Group g = group(1, 8, 70);
  EXPECT_TRUE(nccl_model_time(Op::kAllReduce, Algo::kRing, Proto::kLL128, g.layout, MiB(1), g.ab));
  g.ab.nccl.mixed_architectures = true;
  EXPECT_FALSE(nccl_model_time(Op::kAllReduce, Algo::kRing, Proto::kLL128, g.layout, MiB(1), g.ab));
  g.ab.nccl.compute_capability = 90;  // mixed but Hopper and later: on
  EXPECT_TRUE(nccl_model_time(Op::kAllReduce, Algo::kRing, Proto::kLL128, g.layout, MiB(1), g.ab));
}

TEST(NcclTuning, AutoOnAnNcclGroupChoosesOnlyWhatNcclRuns) {
  // Halving-doubling and hierarchical are never NCCL's; without NCCL they compete.
  for (const Group& g : {group(1, 8, 90, true), group(16, 8, 80), group(4, 1, 80)}) {
    for (Bytes b : {KiB(4), MiB(16), GiB(1)}) {
      const Algo a = choose_algorithm(Op::kAllReduce, g.layout, b, {}, g.ab);
      EXPECT_TRUE(a == Algo::kRing || a == Algo::kTree || a == Algo::kNvls) << algorithm_name(a);
    }
  }
  Group mpi = group(1, 8, 0);
  mpi.ab.nccl = NcclGroup{};
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, mpi.layout, KiB(4), {}, mpi.ab),
            Algo::kHalvingDoubling);
}

TEST(NcclTuning, TheClusterSaysWhereNvlsAndNcclApply) {
  using namespace testing;
  const Cluster h100 =
      build_cluster(one_region(node_group(2, 8, "H100", 8), fabric(FabricKind::kSingleSwitch)));
  Router router(h100.topology);
  const std::vector<int> node0{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_TRUE(group_layout(h100, node0).nvlink_sharp);
  EXPECT_FALSE(group_layout(h100, {0, 8}).nvlink_sharp);         // two nodes
  EXPECT_TRUE(group_layout(h100, {0, 1, 8, 9}).nic_per_member);  // 8 NICs for 8 GPUs
  const Cluster shared =
      build_cluster(one_region(node_group(2, 8, "H100", 1), fabric(FabricKind::kSingleSwitch)));
  EXPECT_FALSE(group_layout(shared, {0, 1, 8, 9}).nic_per_member);
  const AlphaBeta ab = group_alpha_beta(h100, router, group_layout(h100, node0));
  EXPECT_EQ(ab.nccl.graph_channels, 12);  // H100: 24 channels, twice the search's
  EXPECT_EQ(ab.nccl.compute_capability, 90);
  EXPECT_TRUE(ab.nccl.nvlink);
  // A100's NVSwitch does not reduce; CPUs run no NCCL.
  const Cluster a100 =
      build_cluster(one_region(node_group(1, 8, "A100-80GB", 8), fabric(FabricKind::kNone)));
  EXPECT_FALSE(group_layout(a100, node0).nvlink_sharp);
  const Cluster cpu =
      build_cluster(one_region(node_group(2, 1, "CPU", 1), fabric(FabricKind::kSingleSwitch)));
  Router cpu_router(cpu.topology);
  EXPECT_FALSE(group_alpha_beta(cpu, cpu_router, group_layout(cpu, {0, 1})).nccl.runs_nccl());
}

}  // namespace
}  // namespace dtsim
