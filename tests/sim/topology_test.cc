// Cluster builders, device catalog, routing and ECMP.
#include <gtest/gtest.h>

#include <set>

#include "sim/device_catalog.h"
#include "sim/router.h"
#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using testing::fabric;
using testing::node_group;
using testing::one_region;

int count_vertices(const Cluster& c, VertexKind kind) {
  int n = 0;
  for (VertexId v = 0; v < c.topology.num_vertices(); ++v) n += c.topology.vertex(v).kind == kind;
  return n;
}

TEST(DeviceCatalog, HasTheRequiredDevicesWithDatasheetFigures) {
  for (const char* name : {"V100", "P100", "P40", "A100-40GB", "A100-80GB", "H100", "H200", "CPU"}) {
    EXPECT_NE(find_builtin_device(name), nullptr) << name;
  }
  const DeviceSpec* h100 = find_builtin_device("H100");
  EXPECT_DOUBLE_EQ(h100->peak_for(DType::kBf16).flops_per_second(), 989.4e12);
  EXPECT_EQ(h100->memory_capacity, GiB(80));
  EXPECT_DOUBLE_EQ(h100->intra_node_bandwidth.bytes_per_second(), 450e9);
  EXPECT_EQ(find_builtin_device("A100-40GB")->memory_capacity, GiB(40));
  EXPECT_EQ(find_builtin_device("P40")->intra_node_bandwidth.bytes_per_second(), 0);
  EXPECT_EQ(find_builtin_device("nonexistent"), nullptr);
}

TEST(ClusterBuilder, NvSwitchNodeHasOneSwitchAndRanksInOrder) {
  const Cluster c = build_cluster(one_region(node_group(1, 8, "H100", 8), fabric(FabricKind::kNone)));
  EXPECT_EQ(c.num_ranks(), 8);
  EXPECT_EQ(c.nodes.size(), 1u);
  EXPECT_EQ(count_vertices(c, VertexKind::kDevice), 8);
  EXPECT_EQ(count_vertices(c, VertexKind::kNic), 8);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(c.devices[r].local_index, r);
    EXPECT_EQ(c.topology.vertex(c.devices[r].vertex).name, "n0.gpu" + std::to_string(r));
  }
}

TEST(Routing, IntraNodeTrafficPrefersNvLinkOverPcie) {
  Cluster c = build_cluster(one_region(node_group(1, 8, "H100", 8), fabric(FabricKind::kNone)));
  Router router(c.topology);
  const auto route = router.route(c.devices[0].vertex, c.devices[5].vertex);
  ASSERT_EQ(route.size(), 2u);  // gpu0 -> nvswitch -> gpu5
  for (LinkId l : route) EXPECT_EQ(c.topology.link(l).kind, LinkKind::kNvLink);
  EXPECT_DOUBLE_EQ(router.route_bottleneck(c.devices[0].vertex, c.devices[5].vertex).bytes_per_second(),
                   450e9);
  EXPECT_EQ(router.route_latency(c.devices[0].vertex, c.devices[5].vertex).count_ns(), 1000);
}

TEST(Routing, PcieNodeGoesThroughTheSharedSwitchOrRootComplex) {
  // 4 P40 on 2 NICs: devices 0,1 on pcie0, devices 2,3 on pcie1.
  Cluster c = build_cluster(one_region(node_group(1, 4, "P40", 2, 100), fabric(FabricKind::kNone)));
  Router router(c.topology);
  EXPECT_EQ(router.route(c.devices[0].vertex, c.devices[1].vertex).size(), 2u);  // via pcie0
  EXPECT_EQ(router.route(c.devices[0].vertex, c.devices[3].vertex).size(), 4u);  // via rc
}

TEST(Routing, FatTreeEcmpSpreadsPairsOverSpines) {
  // 4 nodes x 1 GPU, 1 node per leaf, 4 spines: any inter-leaf pair has 4 equal paths.
  FabricSpec f = fabric(FabricKind::kFatTree);
  f.nodes_per_leaf = 1;
  f.spines = 4;
  Cluster c = build_cluster(one_region(node_group(4, 1, "H100", 1), f));
  Router router(c.topology);
  EXPECT_EQ(router.count_equal_cost_paths(c.devices[0].vertex, c.devices[1].vertex), 4u);
  std::set<std::string> spines_used;
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      if (a == b) continue;
      const auto route = router.route(c.devices[a].vertex, c.devices[b].vertex);
      ASSERT_EQ(route.size(), 8u);  // gpu-pcie-nic-leaf-spine-leaf-nic-pcie-gpu
      spines_used.insert(c.topology.vertex(c.topology.link(route[3]).dst).name);
    }
  }
  EXPECT_GE(spines_used.size(), 3u) << "12 pairs should spread over the 4 spines";
  // The same pair always takes the same path (flow-level ECMP hashing).
  const auto r1 = router.route(c.devices[0].vertex, c.devices[2].vertex);
  const auto again = router.route(c.devices[0].vertex, c.devices[2].vertex);
  EXPECT_TRUE(std::equal(r1.begin(), r1.end(), again.begin(), again.end()));
}

TEST(ClusterBuilder, FatTreeOversubscriptionSetsUplinkCapacity) {
  // 2 leaves of 2 nodes x 2 NICs x 100 Gbps = 400 Gbps down per leaf; ratio 2 over 2
  // spines -> each leaf-spine link carries 400 / 2 / 2 = 100 Gbps.
  FabricSpec f = fabric(FabricKind::kFatTree);
  f.nodes_per_leaf = 2;
  f.spines = 2;
  f.oversubscription = 2;
  Cluster c = build_cluster(one_region(node_group(4, 2, "A100-80GB", 2, 100), f));
  int uplinks = 0;
  for (LinkId l = 0; l < c.topology.num_links(); ++l) {
    const auto& info = c.topology.link(l);
    if (c.topology.vertex(info.src).name.rfind("leaf", 0) == 0 &&
        c.topology.vertex(info.dst).name.rfind("spine", 0) == 0) {
      EXPECT_DOUBLE_EQ(info.bandwidth.gbit_per_second(), 100);
      ++uplinks;
    }
  }
  EXPECT_EQ(uplinks, 4);  // 2 leaves x 2 spines
}

TEST(ClusterBuilder, RailOptimizedPutsEachRailOnItsOwnLeaf) {
  FabricSpec f = fabric(FabricKind::kRailOptimized);
  f.nodes_per_group = 4;
  Cluster c = build_cluster(one_region(node_group(4, 8, "H100", 8), f));
  Router router(c.topology);
  // Same rail (local index 3 on nodes 0 and 2): nic -> rail leaf -> nic, no spine.
  const auto same_rail = router.route(c.devices[3].vertex, c.devices[2 * 8 + 3].vertex);
  EXPECT_EQ(same_rail.size(), 6u);
  // Different rails need a spine.
  const auto cross_rail = router.route(c.devices[3].vertex, c.devices[2 * 8 + 4].vertex);
  EXPECT_EQ(cross_rail.size(), 8u);
}

TEST(ClusterBuilder, ThinTreeJoinsGroupsThroughNarrowUplinks) {
  FabricSpec f = fabric(FabricKind::kThinTree);
  f.nodes_per_group = 2;
  f.group_uplink = Bandwidth::gbps(56);
  Cluster c = build_cluster(one_region(node_group(4, 1, "P100", 1, 56), f));
  Router router(c.topology);
  const auto inter = router.route(c.devices[0].vertex, c.devices[3].vertex);
  bool through_core = false;
  for (LinkId l : inter) through_core |= c.topology.vertex(c.topology.link(l).dst).name == "core";
  EXPECT_TRUE(through_core);
  EXPECT_EQ(router.route(c.devices[0].vertex, c.devices[1].vertex).size(), 6u);  // same group
}

TEST(ClusterBuilder, TorusLinksNeighboursWithWrapAround) {
  // 4 x 4 torus: every router has 4 neighbours; 16 routers x 4 / 2 = 32 cables = 64 links.
  FabricSpec f = fabric(FabricKind::kTorus);
  f.torus_dims = {4, 4};
  Cluster c = build_cluster(one_region(node_group(16, 1, "V100", 1, 100), f));
  int router_links = 0;
  for (LinkId l = 0; l < c.topology.num_links(); ++l) {
    const auto& info = c.topology.link(l);
    router_links += c.topology.vertex(info.src).name.rfind("router", 0) == 0 &&
                    c.topology.vertex(info.dst).name.rfind("router", 0) == 0;
  }
  EXPECT_EQ(router_links, 64);
  Router router(c.topology);
  // Node 0 to node 3 is one hop through the wrap-around link: gpu-pcie-nic-rtr-rtr-nic-pcie-gpu.
  EXPECT_EQ(router.route(c.devices[0].vertex, c.devices[3].vertex).size(), 7u);
  // Node 0 to node 10 (2,2) is 4 router hops away.
  EXPECT_EQ(router.route(c.devices[0].vertex, c.devices[10].vertex).size(), 10u);
}

TEST(ClusterBuilder, RegionsAreJoinedThroughGatewaysAndWan) {
  Cluster c = build_cluster(testing::two_regions({"us", "eu"}, node_group(2, 4, "A100-80GB", 1, 200),
                                                 Bandwidth::gbps(10), Duration::ms(30)));
  EXPECT_EQ(c.num_ranks(), 16);
  EXPECT_EQ(c.devices[8].region, 1);
  EXPECT_EQ(c.topology.vertex(c.devices[8].vertex).name, "eu.n0.gpu0");
  Router router(c.topology);
  const VertexId a = c.devices[0].vertex, b = c.devices[15].vertex;
  EXPECT_DOUBLE_EQ(router.route_bottleneck(a, b).gbit_per_second(), 10);
  EXPECT_GT(router.route_latency(a, b), Duration::ms(30));
  bool wan = false;
  for (LinkId l : router.route(a, b)) wan |= c.topology.link(l).kind == LinkKind::kWan;
  EXPECT_TRUE(wan);
}

TEST(Routing, NeverTransitsThroughAnotherNodesPcieTree) {
  // Rail-optimized with 2 rails and 1 spine: a path nic0 -> pcie -> rc -> pcie -> nic1 of
  // a third node would be a shortcut between rails; it must not be used.
  FabricSpec f = fabric(FabricKind::kRailOptimized);
  f.nodes_per_group = 3;
  f.spines = 1;
  f.oversubscription = 64;  // make the spine path expensive
  Cluster c = build_cluster(one_region(node_group(3, 2, "H100", 2, 400), f));
  Router router(c.topology);
  for (LinkId l : router.route(c.devices[0].vertex, c.devices[3].vertex)) {
    const auto& info = c.topology.link(l);
    const int src_node = c.topology.vertex(info.src).node;
    const int dst_node = c.topology.vertex(info.dst).node;
    EXPECT_TRUE(src_node != 2 && dst_node != 2) << c.topology.link_name(l);
  }
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

TEST(ClusterBuilder, RailOptimizedAcceptsGroupsWithFewerRails) {
  // 2 nodes with 8 NICs and 2 with 4 in groups of 2: the second group's rails 4..7 are
  // unused leaves; they get no uplinks, and every pair still routes.
  ClusterSpec spec = testing::one_region(testing::node_group(2, 8, "H100", 8), testing::fabric(FabricKind::kRailOptimized));
  spec.regions[0].node_groups.push_back(testing::node_group(2, 8, "H100", 4));
  spec.regions[0].fabric.nodes_per_group = 2;
  const Cluster c = build_cluster(spec);
  Router router(c.topology);
  EXPECT_FALSE(router.route(c.devices[7].vertex, c.devices[31].vertex).empty());
  EXPECT_FALSE(router.route(c.devices[31].vertex, c.devices[0].vertex).empty());
}

}  // namespace
}  // namespace dtsim
