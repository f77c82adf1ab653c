// Tests of the scenario loader on valid input: defaults, unit conversion, rank numbering,
// custom devices, regions, task replication, overrides and the collective sweep's graph.
#include "scenarios/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "sim/device_catalog.h"

namespace dtsim {
namespace {

using nlohmann::json;

Scenario load(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    return load_scenario(json::parse(text), "test.json", overrides);
  } catch (const ScenarioError& e) {
    ADD_FAILURE() << "unexpected errors:\n" << e.what();
    throw;
  }
}

const std::string kSweep = R"({"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]})";

std::string doc(const std::string& cluster, const std::string& workload = kSweep,
                const std::string& extra = "") {
  return "{\"cluster\": " + cluster + ", \"workload\": " + workload + extra + "}";
}

const std::string kTwoNodes = R"({
  "nodes": [{"count": 2, "device": "H100", "devices_per_node": 4, "nic_bandwidth": "400Gbps"}],
  "fabric": {"kind": "single_switch"}
})";

TEST(ScenarioLoader, NodeDefaultsComeFromTheDoc) {
  const Scenario s = load(doc(R"({"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8,
                                             "nic_bandwidth": "400Gbps"}]})"));
  ASSERT_EQ(s.cluster_spec.regions.size(), 1u);
  const RegionSpec& r = s.cluster_spec.regions[0];
  ASSERT_EQ(r.node_groups.size(), 1u);
  const NodeGroupSpec& g = r.node_groups[0];
  const DeviceSpec* h100 = find_builtin_device("H100");
  EXPECT_EQ(g.device, h100);
  EXPECT_EQ(g.count, 1);
  EXPECT_EQ(g.devices_per_node, 8);
  EXPECT_EQ(g.intra, IntraNodeKind::kNvSwitch);
  EXPECT_EQ(g.intra_bandwidth, h100->intra_node_bandwidth);
  EXPECT_EQ(g.intra_latency, Duration::ns(500));
  EXPECT_EQ(g.pcie_bandwidth, h100->pcie_bandwidth);
  EXPECT_EQ(g.pcie_latency, Duration::ns(500));
  EXPECT_EQ(g.nics, 1);
  EXPECT_DOUBLE_EQ(g.nic_bandwidth.bytes_per_second(), 50e9);
  EXPECT_EQ(g.nic_latency, Duration::ns(1000));
  EXPECT_DOUBLE_EQ(g.host_bandwidth.bytes_per_second(), 100e9);
  // The links carry the line rates times the device's link efficiencies.
  EXPECT_DOUBLE_EQ(g.intra_efficiency, h100->efficiency.nvlink_efficiency);
  EXPECT_DOUBLE_EQ(g.speed_variation, h100->efficiency.speed_variation);
  EXPECT_EQ(s.cluster_spec.speed_seed, 1u);
  EXPECT_DOUBLE_EQ(g.pcie_efficiency, h100->efficiency.pcie_efficiency);
  int nvlinks = 0, pcie_links = 0;
  for (LinkId l = 0; l < s.cluster.topology.num_links(); ++l) {
    const LinkInfo& link = s.cluster.topology.link(l);
    if (link.kind == LinkKind::kNvLink) {
      ++nvlinks;
      EXPECT_DOUBLE_EQ(link.bandwidth.bytes_per_second(),
                       h100->intra_node_bandwidth.bytes_per_second() * 0.8);
    } else if (link.kind == LinkKind::kPcie) {
      ++pcie_links;
      EXPECT_DOUBLE_EQ(link.bandwidth.bytes_per_second(),
                       h100->pcie_bandwidth.bytes_per_second() * 0.8);
    }
  }
  EXPECT_EQ(nvlinks, 16);  // 8 devices to the NVSwitch, both directions
  EXPECT_GT(pcie_links, 0);
  // One node needs no fabric.
  EXPECT_EQ(r.fabric.kind, FabricKind::kNone);
  EXPECT_EQ(r.fabric.link_latency, Duration::ns(1000));
  EXPECT_EQ(s.cluster.num_ranks(), 8);
  // Top-level defaults.
  EXPECT_EQ(s.name, "test");
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.simulation.network_model, "flow");
  EXPECT_TRUE(s.simulation.trace);
  EXPECT_EQ(s.source, "test.json");
}

TEST(ScenarioLoader, ClusterSpeedVariationOverridesTheDevicesAndSeedsTheDraws) {
  const Scenario s = load(doc(R"({"nodes": [{"count": 2, "device": "H100", "devices_per_node": 8,
                                             "nic_bandwidth": "400Gbps"}],
                                  "fabric": {"kind": "single_switch"},
                                  "speed_variation": 0.2, "speed_seed": 9})"));
  for (const NodeGroupSpec& g : s.cluster_spec.regions[0].node_groups) {
    EXPECT_DOUBLE_EQ(g.speed_variation, 0.2);
  }
  EXPECT_EQ(s.cluster_spec.speed_seed, 9u);
  // Beyond the H100's own 0.08 (speeds within 1 +- 0.04): the override took.
  bool wide = false;
  for (const ClusterDevice& d : s.cluster.devices) {
    EXPECT_GE(d.speed, 0.9);
    EXPECT_LT(d.speed, 1.1);
    wide |= d.speed < 0.96 || d.speed >= 1.04;
  }
  EXPECT_TRUE(wide);
  const Scenario ideal = load(doc(R"({"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8,
                                                 "nics": 0}], "speed_variation": 0})"));
  for (const ClusterDevice& d : ideal.cluster.devices) EXPECT_EQ(d.speed, 1.0);
}

// A node group's compute share slows its devices by that factor, on top of the unit's draw.
TEST(ScenarioLoader, ComputeShareSlowsTheGroupsDevices) {
  const Scenario s = load(doc(R"({"nodes": [{"count": 1, "device": "CPU", "devices_per_node": 1,
                                             "nic_bandwidth": "10Gbps"},
                                            {"count": 1, "device": "CPU", "devices_per_node": 2,
                                             "nic_bandwidth": "10Gbps", "compute_share": 0.5}],
                                  "fabric": {"kind": "single_switch"}})"));
  ASSERT_EQ(s.cluster.devices.size(), 3u);
  EXPECT_EQ(s.cluster.devices[0].speed, 1.0);
  EXPECT_EQ(s.cluster.devices[1].speed, 0.5);
  EXPECT_EQ(s.cluster.devices[2].speed, 0.5);
  EXPECT_EQ(s.cluster_spec.regions[0].node_groups[1].compute_share, 0.5);
}

TEST(ScenarioLoader, DeviceWithoutNvLinkDefaultsToPcie) {
  const Scenario s = load(doc(R"({"nodes": [{"count": 1, "device": "P40", "devices_per_node": 4,
                                             "nics": 0}]})"));
  const NodeGroupSpec& g = s.cluster_spec.regions[0].node_groups[0];
  EXPECT_EQ(g.intra, IntraNodeKind::kPcie);
  EXPECT_EQ(g.nics, 0);
  // An explicit intra_bandwidth means NVLink even on such a device.
  const Scenario t = load(doc(R"({"nodes": [{"count": 1, "device": "P40", "devices_per_node": 4,
                                             "intra_bandwidth": "100GB/s", "nics": 0}]})"));
  EXPECT_EQ(t.cluster_spec.regions[0].node_groups[0].intra, IntraNodeKind::kNvSwitch);
  EXPECT_DOUBLE_EQ(t.cluster_spec.regions[0].node_groups[0].intra_bandwidth.bytes_per_second(), 100e9);
}

TEST(ScenarioLoader, UnitsAreConverted) {
  const Scenario s = load(doc(R"({"nodes": [{"count": 2, "device": "A100-80GB", "devices_per_node": 8,
      "intra": "nvlink_mesh", "intra_bandwidth": "25GB/s", "intra_latency": "1.5us",
      "pcie_bandwidth": "16GiB/s", "pcie_latency": "2us", "nics": 4, "nic_bandwidth": "200Gbps",
      "nic_latency": "700ns", "host_bandwidth": "1TB/s"}],
    "fabric": {"kind": "fat_tree", "link_latency": "0.5us", "nodes_per_leaf": 1, "spines": 3,
               "oversubscription": 2}})"));
  const NodeGroupSpec& g = s.cluster_spec.regions[0].node_groups[0];
  EXPECT_EQ(g.intra, IntraNodeKind::kNvLinkMesh);
  EXPECT_DOUBLE_EQ(g.intra_bandwidth.bytes_per_second(), 25e9);
  EXPECT_EQ(g.intra_latency, Duration::ns(1500));
  EXPECT_DOUBLE_EQ(g.pcie_bandwidth.bytes_per_second(), 16.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(g.pcie_latency, Duration::ns(2000));
  EXPECT_EQ(g.nics, 4);
  EXPECT_DOUBLE_EQ(g.nic_bandwidth.bytes_per_second(), 25e9);
  EXPECT_EQ(g.nic_latency, Duration::ns(700));
  EXPECT_DOUBLE_EQ(g.host_bandwidth.bytes_per_second(), 1e12);
  const FabricSpec& f = s.cluster_spec.regions[0].fabric;
  EXPECT_EQ(f.kind, FabricKind::kFatTree);
  EXPECT_EQ(f.link_latency, Duration::ns(500));
  EXPECT_EQ(f.nodes_per_leaf, 1);
  EXPECT_EQ(f.spines, 3);
  EXPECT_DOUBLE_EQ(f.oversubscription, 2.0);
  EXPECT_EQ(s.cluster.num_ranks(), 16);
}

TEST(ScenarioLoader, FabricDefaults) {
  const Scenario s = load(doc(R"({"nodes": [{"count": 4, "device": "H100", "devices_per_node": 8,
                                             "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "fat_tree"}})"));
  const FabricSpec& f = s.cluster_spec.regions[0].fabric;
  EXPECT_EQ(f.nodes_per_leaf, 16);
  EXPECT_EQ(f.spines, 0);  // NICs per node, decided by the builder
  EXPECT_DOUBLE_EQ(f.oversubscription, 1.0);
  const Scenario t = load(doc(R"({"nodes": [{"count": 4, "device": "H100", "devices_per_node": 8,
                                             "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "thin_tree"}})"));
  // A single group of 16 needs no uplink.
  EXPECT_EQ(t.cluster_spec.regions[0].fabric.kind, FabricKind::kThinTree);
  EXPECT_EQ(t.cluster_spec.regions[0].fabric.nodes_per_group, 16);
}

TEST(ScenarioLoader, TorusAndThinTreeBuild) {
  const Scenario s = load(doc(R"({"nodes": [{"count": 6, "device": "H100", "devices_per_node": 4,
      "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "torus", "torus_dims": [3, 2],
      "torus_link_bandwidth": "100GB/s"}})"));
  EXPECT_EQ(s.cluster_spec.regions[0].fabric.torus_dims, (std::vector<int>{3, 2}));
  EXPECT_EQ(s.cluster.nodes.size(), 6u);
  const Scenario t = load(doc(R"({"nodes": [{"count": 6, "device": "H100", "devices_per_node": 4,
      "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "thin_tree", "nodes_per_group": 2,
      "group_uplink": "800Gbps"}})"));
  EXPECT_DOUBLE_EQ(t.cluster_spec.regions[0].fabric.group_uplink.bytes_per_second(), 100e9);
}

TEST(ScenarioLoader, RanksAreNumberedNodeByNodeAcrossGroups) {
  const Scenario s = load(doc(R"({"nodes": [
      {"count": 2, "device": "H100", "devices_per_node": 4, "nic_bandwidth": "400Gbps"},
      {"count": 1, "device": "A100-80GB", "devices_per_node": 2, "nic_bandwidth": "200Gbps"}],
    "fabric": {"kind": "single_switch"}})"));
  ASSERT_EQ(s.cluster.num_ranks(), 10);
  EXPECT_EQ(s.cluster.devices[3].node, 0);
  EXPECT_EQ(s.cluster.devices[4].node, 1);
  EXPECT_EQ(s.cluster.devices[4].local_index, 0);
  EXPECT_EQ(s.cluster.devices[8].node, 2);
  EXPECT_EQ(s.cluster.devices[8].spec->name, "A100-80GB");
  EXPECT_EQ(s.cluster.devices[9].local_index, 1);
}

TEST(ScenarioLoader, CustomDevicesAreOwnedByTheCluster) {
  const Scenario s = load(doc(R"({
    "devices": [
      {"name": "H100-slow", "base": "H100", "peak": {"bf16": "500TFLOPS"}, "nvlink_bandwidth": "300GB/s"},
      {"name": "Accel", "kind": "cpu", "peak": {"fp32": "2TFLOPS", "fp16": "4TFLOPS"},
       "memory": "64GiB", "memory_bandwidth": "400GB/s", "pcie_bandwidth": "32GB/s"}],
    "nodes": [{"count": 1, "device": "H100-slow", "devices_per_node": 2, "nic_bandwidth": "400Gbps"},
              {"count": 1, "device": "Accel", "devices_per_node": 1, "nic_bandwidth": "100Gbps"}],
    "fabric": {"kind": "single_switch"}})"));
  ASSERT_EQ(s.cluster.owned_specs.size(), 2u);
  const DeviceSpec* h100 = find_builtin_device("H100");
  const DeviceSpec& slow = *s.cluster.devices[0].spec;
  EXPECT_EQ(&slow, s.cluster.owned_specs[0].get());
  EXPECT_EQ(slow.name, "H100-slow");
  EXPECT_DOUBLE_EQ(slow.peak_for(DType::kBf16).flops_per_second(), 500e12);
  EXPECT_EQ(slow.peak_for(DType::kFp8), h100->peak_for(DType::kFp8));
  EXPECT_EQ(slow.memory_capacity, h100->memory_capacity);
  EXPECT_DOUBLE_EQ(slow.intra_node_bandwidth.bytes_per_second(), 300e9);
  // The node group's intra bandwidth defaults to the custom device's NVLink.
  EXPECT_DOUBLE_EQ(s.cluster_spec.regions[0].node_groups[0].intra_bandwidth.bytes_per_second(), 300e9);
  const DeviceSpec& accel = *s.cluster.devices[2].spec;
  EXPECT_EQ(accel.kind, DeviceKind::kCpu);
  EXPECT_EQ(accel.memory_capacity, GiB(64));
  EXPECT_DOUBLE_EQ(accel.peak_for(DType::kFp16).flops_per_second(), 4e12);
  EXPECT_EQ(accel.peak_for(DType::kBf16).flops_per_second(), 0);
  EXPECT_EQ(s.cluster_spec.regions[0].node_groups[1].intra, IntraNodeKind::kPcie);

  // The node groups point at the cluster's own copies, which live behind unique_ptrs.
  EXPECT_EQ(s.cluster_spec.regions[0].node_groups[1].device, s.cluster.owned_specs[1].get());
}

TEST(ScenarioLoader, CustomDeviceEfficiencyOverridesTheBase) {
  const Scenario s = load(doc(R"({
    "devices": [
      {"name": "H100-tuned", "base": "H100",
       "efficiency": {"gemm_max": 0.7, "gemm_half_flops": "2GFLOP", "gemm_half_dim": 64,
                      "attention_factor": 0.6, "conv_factor": 1, "memory_bandwidth_fraction": 0.9,
                      "kernel_launch": "3us", "comm_compute_slowdown": 0,
                      "nvlink_efficiency": 0.9, "pcie_efficiency": 0.7, "speed_variation": 0.1,
                      "sustained_compute_fraction": 0.9,
                      "collective_protocols": {"Simple": {"base": "2us", "intra_node_step": "1us",
                                                          "network_step": "4us"},
                                               "LL128": {"bandwidth_fraction": 0}}}},
      {"name": "H100-launch", "base": "H100", "efficiency": {"kernel_launch": "8us"}},
      {"name": "Accel", "peak": {"fp32": "2TFLOPS"}, "memory": "64GiB",
       "memory_bandwidth": "400GB/s", "pcie_bandwidth": "32GB/s"}],
    "nodes": [{"count": 1, "device": "H100-tuned", "devices_per_node": 1, "nics": 0}]})"));
  ASSERT_EQ(s.cluster.owned_specs.size(), 3u);
  const DeviceEfficiency& tuned = s.cluster.owned_specs[0]->efficiency;
  EXPECT_DOUBLE_EQ(tuned.gemm_max, 0.7);
  EXPECT_DOUBLE_EQ(tuned.gemm_half_flops, 2e9);
  EXPECT_DOUBLE_EQ(tuned.gemm_half_dim, 64);
  EXPECT_DOUBLE_EQ(tuned.attention_factor, 0.6);
  EXPECT_DOUBLE_EQ(tuned.conv_factor, 1);
  EXPECT_DOUBLE_EQ(tuned.memory_bandwidth_fraction, 0.9);
  EXPECT_EQ(tuned.kernel_launch, Duration::us(3));
  EXPECT_DOUBLE_EQ(tuned.comm_compute_slowdown, 0);
  EXPECT_DOUBLE_EQ(tuned.nvlink_efficiency, 0.9);
  EXPECT_DOUBLE_EQ(tuned.pcie_efficiency, 0.7);
  EXPECT_DOUBLE_EQ(tuned.speed_variation, 0.1);
  EXPECT_DOUBLE_EQ(tuned.sustained_compute_fraction, 0.9);
  const ProtocolCosts& simple = costs_of(tuned.collective_protocols, CollectiveProtocol::kSimple);
  EXPECT_EQ(simple.base, Duration::us(2));
  EXPECT_EQ(simple.intra_node_step, Duration::us(1));
  EXPECT_EQ(simple.network_step, Duration::us(4));
  // Keys not given keep the base's figures; LL128 is turned off.
  const ProtocolTable& h100_protocols = find_builtin_device("H100")->efficiency.collective_protocols;
  EXPECT_DOUBLE_EQ(simple.bandwidth_fraction,
                   costs_of(h100_protocols, CollectiveProtocol::kSimple).bandwidth_fraction);
  EXPECT_EQ(costs_of(tuned.collective_protocols, CollectiveProtocol::kLL).base,
            costs_of(h100_protocols, CollectiveProtocol::kLL).base);
  EXPECT_DOUBLE_EQ(costs_of(tuned.collective_protocols, CollectiveProtocol::kLL128).bandwidth_fraction,
                   0);
  // Keys not given keep the base's figures.
  const DeviceEfficiency& h100 = find_builtin_device("H100")->efficiency;
  const DeviceEfficiency& launch = s.cluster.owned_specs[1]->efficiency;
  EXPECT_EQ(launch.kernel_launch, Duration::us(8));
  EXPECT_DOUBLE_EQ(launch.gemm_max, h100.gemm_max);
  EXPECT_DOUBLE_EQ(launch.gemm_half_flops, h100.gemm_half_flops);
  EXPECT_DOUBLE_EQ(launch.memory_bandwidth_fraction, h100.memory_bandwidth_fraction);
  EXPECT_DOUBLE_EQ(launch.comm_compute_slowdown, h100.comm_compute_slowdown);
  EXPECT_DOUBLE_EQ(launch.nvlink_efficiency, h100.nvlink_efficiency);
  EXPECT_DOUBLE_EQ(launch.sustained_compute_fraction, h100.sustained_compute_fraction);
  EXPECT_EQ(costs_of(launch.collective_protocols, CollectiveProtocol::kSimple).network_step,
            costs_of(h100.collective_protocols, CollectiveProtocol::kSimple).network_step);
  // Without a base, the defaults.
  const DeviceEfficiency defaults;
  const DeviceEfficiency& accel = s.cluster.owned_specs[2]->efficiency;
  EXPECT_DOUBLE_EQ(accel.gemm_max, defaults.gemm_max);
  EXPECT_EQ(accel.kernel_launch, defaults.kernel_launch);
  for (const ProtocolCosts& c : accel.collective_protocols) EXPECT_EQ(c.bandwidth_fraction, 0);
}

TEST(ScenarioLoader, RegionsAndWan) {
  const std::string region_a = R"({"name": "us-east", "gateway_bandwidth": "800Gbps",
    "nodes": [{"count": 2, "device": "H100", "devices_per_node": 8, "nic_bandwidth": "400Gbps"}],
    "fabric": {"kind": "single_switch"}})";
  const std::string region_b = R"({"name": "eu-west", "gateway_bandwidth": "400Gbps",
    "nodes": [{"count": 1, "device": "A100-80GB", "devices_per_node": 4, "nic_bandwidth": "200Gbps"}]})";
  const Scenario s = load(doc("{\"regions\": [" + region_a + ", " + region_b + R"(],
    "wan": [{"between": ["us-east", "eu-west"], "bandwidth": "10Gbps", "latency": "30ms"}]})"));
  ASSERT_EQ(s.cluster_spec.regions.size(), 2u);
  EXPECT_EQ(s.cluster_spec.regions[0].name, "us-east");
  EXPECT_DOUBLE_EQ(s.cluster_spec.regions[0].gateway_bandwidth.bytes_per_second(), 100e9);
  EXPECT_EQ(s.cluster_spec.regions[1].fabric.kind, FabricKind::kNone);
  ASSERT_EQ(s.cluster_spec.wan.size(), 1u);
  EXPECT_EQ(s.cluster_spec.wan[0].a, "us-east");
  EXPECT_EQ(s.cluster_spec.wan[0].b, "eu-west");
  EXPECT_EQ(s.cluster_spec.wan[0].latency, Duration::ms(30));
  EXPECT_DOUBLE_EQ(s.cluster_spec.wan[0].bandwidth.bytes_per_second(), 1.25e9);
  ASSERT_EQ(s.cluster.num_ranks(), 20);
  EXPECT_EQ(s.cluster.devices[15].region, 0);
  EXPECT_EQ(s.cluster.devices[16].region, 1);
  EXPECT_EQ(s.cluster.regions[1].name, "eu-west");
}

TEST(ScenarioLoader, NameDescriptionAndSimulation) {
  const Scenario s = load(doc(kTwoNodes, kSweep,
                              R"(, "$schema": "../schema/scenario.schema.json", "name": "demo",
                                "description": "two nodes",
                                "simulation": {"network_model": "analytical", "trace": false})"));
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.description, "two nodes");
  EXPECT_EQ(s.simulation.network_model, "analytical");
  EXPECT_FALSE(s.simulation.trace);
}

// ---- collective sweep -------------------------------------------------------------------

TEST(ScenarioLoader, SweepValuesAndDefaults) {
  const Scenario s = load(doc(kTwoNodes));
  EXPECT_EQ(s.workload_kind, WorkloadKind::kCollective);
  const CollectiveSweep& c = s.collective;
  EXPECT_EQ(c.ops, (std::vector<CollectiveOp>{CollectiveOp::kAllReduce}));
  EXPECT_EQ(c.algorithms, (std::vector<CollectiveAlgorithm>{CollectiveAlgorithm::kAuto}));
  EXPECT_EQ(c.sizes, (std::vector<Bytes>{MiB(1)}));
  EXPECT_EQ(c.group, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(c.iterations, 1);
  EXPECT_EQ(c.options.chunk_bytes, MiB(4));
  EXPECT_EQ(c.options.torus_x, 0);
  EXPECT_EQ(c.options.root, 0);
}

TEST(ScenarioLoader, SweepSizeRangeGroupRangeAndOptions) {
  const Scenario s = load(doc(kTwoNodes, R"({"kind": "collective",
    "ops": ["broadcast", "all_reduce"], "algorithms": ["ring", "tree"],
    "sizes": {"from": "1KiB", "to": "1MiB", "factor": 4},
    "group": {"first": 1, "count": 3, "stride": 2}, "iterations": 2,
    "chunk_bytes": "512KiB", "torus_dims": [3, 1], "root": 2})"));
  const CollectiveSweep& c = s.collective;
  EXPECT_EQ(c.sizes, (std::vector<Bytes>{KiB(1), KiB(4), KiB(16), KiB(64), KiB(256), MiB(1)}));
  EXPECT_EQ(c.group, (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(c.iterations, 2);
  EXPECT_EQ(c.options.chunk_bytes, KiB(512));
  EXPECT_EQ(c.options.torus_x, 3);
  EXPECT_EQ(c.options.torus_y, 1);
  EXPECT_EQ(c.options.root, 2);
  // The range stops at the last size not above `to`, and defaults to factor 2.
  const Scenario t = load(doc(kTwoNodes, R"({"kind": "collective", "ops": ["all_gather"],
    "sizes": {"from": "3B", "to": "20B"}})"));
  EXPECT_EQ(t.collective.sizes, (std::vector<Bytes>{Bytes(3), Bytes(6), Bytes(12)}));
}

TEST(ScenarioLoader, SweepGraphShape) {
  const Scenario s = load(doc(kTwoNodes, R"({"kind": "collective",
    "ops": ["all_reduce", "all_gather"], "algorithms": ["ring", "halving_doubling"],
    "sizes": ["1KiB", "1MiB", "0B"], "group": [0, 2, 4, 6], "iterations": 3})"));
  const TaskGraph g = build_collective_sweep_graph(s.collective);
  const size_t calls = 2 * 2 * 3 * 3;
  ASSERT_EQ(g.collectives().size(), calls);
  ASSERT_EQ(g.tasks().size(), calls * 4);
  EXPECT_EQ(g.streams(), (std::vector<std::string>{"comm"}));
  EXPECT_EQ(g.collectives()[0].label, "all_reduce/ring/1024B#0");
  EXPECT_EQ(g.collectives()[2].label, "all_reduce/ring/1024B#2");
  EXPECT_EQ(g.collectives()[3].label, "all_reduce/ring/1048576B#0");
  EXPECT_EQ(g.collectives()[9].label, "all_reduce/halving_doubling/1024B#0");
  EXPECT_EQ(g.collectives().back().label, "all_gather/halving_doubling/0B#2");
  EXPECT_EQ(g.collectives()[0].members, (std::vector<int>{0, 2, 4, 6}));
  // Each call has one task per member, all on "comm", and each rank's calls are in order.
  std::vector<std::vector<uint32_t>> per_rank(8);
  for (const TaskView t : g.tasks()) {
    EXPECT_EQ(t.kind, TaskKind::kCollective);
    EXPECT_EQ(g.streams()[t.stream], "comm");
    EXPECT_EQ(t.name, g.collectives()[t.collective].label);
    per_rank[static_cast<size_t>(t.rank)].push_back(t.collective);
  }
  for (int r : {0, 2, 4, 6}) {
    ASSERT_EQ(per_rank[static_cast<size_t>(r)].size(), calls);
    EXPECT_TRUE(std::is_sorted(per_rank[static_cast<size_t>(r)].begin(),
                               per_rank[static_cast<size_t>(r)].end()));
  }
  EXPECT_TRUE(per_rank[1].empty());
  EXPECT_TRUE(g.validate(8).empty());
}

TEST(ScenarioLoader, BuildCollectiveSweepGraphDirectly) {
  CollectiveSweep sweep;
  sweep.ops = {CollectiveOp::kAllToAll};
  sweep.algorithms = {CollectiveAlgorithm::kDirect};
  sweep.sizes = {Bytes(8), Bytes(16)};
  sweep.group = {3, 1};
  sweep.iterations = 2;
  sweep.options.chunk_bytes = KiB(64);
  const TaskGraph g = build_collective_sweep_graph(sweep);
  ASSERT_EQ(g.collectives().size(), 4u);
  ASSERT_EQ(g.tasks().size(), 8u);
  EXPECT_EQ(g.collectives()[1].label, "all_to_all/direct/8B#1");
  EXPECT_EQ(g.collectives()[2].bytes, Bytes(16));
  EXPECT_EQ(g.collectives()[2].options.chunk_bytes, KiB(64));
  EXPECT_EQ(g.tasks()[0].rank, 3);
  EXPECT_EQ(g.tasks()[1].rank, 1);
  EXPECT_TRUE(g.tasks()[0].deps.empty());
  EXPECT_TRUE(g.validate(4).empty());
}

// ---- task graphs ------------------------------------------------------------------------

TEST(ScenarioLoader, TaskGraphReplicationAndDeps) {
  const Scenario s = load(doc(kTwoNodes, R"({
    "kind": "task_graph",
    "collectives": [
      {"name": "grads", "op": "all_reduce", "algorithm": "ring", "group": "all", "bytes": "256MiB"},
      {"name": "half", "op": "all_gather", "group": {"first": 0, "count": 4}, "bytes": "1MiB"}],
    "tasks": [
      {"id": "fwd", "ranks": "all", "kind": "compute", "duration": "12ms"},
      {"id": "bwd", "ranks": "all", "kind": "compute", "flops": "40TFLOP", "dtype": "bf16",
       "deps": ["fwd"]},
      {"id": "ar", "ranks": "all", "kind": "collective", "collective": "grads", "stream": "comm",
       "deps": ["bwd"]},
      {"id": "ag", "ranks": [3, 2, 1, 0], "kind": "collective", "collective": "half", "deps": ["ar"]},
      {"id": "to_next", "rank": 0, "kind": "send", "peer": 1, "bytes": "64MiB", "deps": ["ar"]},
      {"id": "from_prev", "rank": 1, "kind": "recv", "peer": 0, "bytes": "64MiB"},
      {"id": "wait", "ranks": [2, 3], "kind": "compute", "duration": "1us", "deps": ["to_next"]},
      {"id": "copy", "rank": 4, "kind": "memcpy", "direction": "d2d", "bytes": "1GiB"},
      {"id": "p2p", "rank": 5, "kind": "memcpy", "direction": "peer", "peer": 6, "bytes": "1GiB"},
      {"id": "mem", "ranks": "all", "kind": "alloc", "bytes": "10GiB", "stream": "mem"},
      {"id": "unmem", "ranks": "all", "kind": "free", "bytes": "10GiB", "stream": "mem",
       "deps": ["mem"]}]})"));
  EXPECT_EQ(s.workload_kind, WorkloadKind::kTaskGraph);
  const TaskGraph& g = s.task_graph;
  ASSERT_EQ(g.tasks().size(), 8u + 8 + 8 + 4 + 1 + 1 + 2 + 1 + 1 + 8 + 8);
  // fwd copies 0..7, bwd copies 8..15: bwd on rank r depends on fwd on rank r.
  for (TaskId i = 8; i < 16; ++i) {
    const TaskView t = g.task(i);
    EXPECT_EQ(t.name, "bwd");
    EXPECT_EQ(t.rank, static_cast<int>(i - 8));
    ASSERT_EQ(t.deps.size(), 1u);
    EXPECT_EQ(g.task(t.deps[0]).name, "fwd");
    EXPECT_EQ(g.task(t.deps[0]).rank, t.rank);
    // Priced by FLOPs: one GEMM of unknown shape, no duration until lowering prices it.
    ASSERT_NE(t.ops, kNoOps);
    ASSERT_EQ(g.op_list(t.ops).size(), 1u);
    const OpSignature& op = g.op_list(t.ops)[0];
    EXPECT_EQ(op.kind, KernelKind::kGemm);
    EXPECT_EQ(op.name, "bwd");
    EXPECT_DOUBLE_EQ(op.flops, 40e12);
    EXPECT_EQ(op.math, DType::kBf16);
    EXPECT_EQ(t.duration, Duration::zero());
  }
  EXPECT_EQ(g.task(0).duration, Duration::ms(12));
  EXPECT_EQ(g.task(0).ops, kNoOps);
  // Each task entry naming a collective is one call of it.
  ASSERT_EQ(g.collectives().size(), 2u);
  EXPECT_EQ(g.collectives()[0].label, "grads");
  EXPECT_EQ(g.collectives()[0].algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(g.collectives()[0].bytes, MiB(256));
  EXPECT_EQ(g.collectives()[1].members, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(g.collectives()[1].algorithm, CollectiveAlgorithm::kAuto);
  // ag copies (in the order written: ranks 3, 2, 1, 0) depend on ar of the same rank.
  const TaskId ag0 = 24;
  EXPECT_EQ(g.task(ag0).rank, 3);
  EXPECT_EQ(g.task(ag0).collective, 1u);
  EXPECT_EQ(g.task(g.task(ag0).deps[0]).rank, 3);
  EXPECT_EQ(g.task(g.task(ag0).deps[0]).name, "ar");
  // A dependency on a single-copy task is shared by every copy.
  const TaskId send = 28;
  EXPECT_EQ(g.task(send).kind, TaskKind::kSend);
  EXPECT_EQ(g.task(send).peer, 1);
  EXPECT_EQ(g.task(send).bytes, MiB(64));
  for (TaskId w : {TaskId{30}, TaskId{31}}) {
    EXPECT_EQ(g.task(w).name, "wait");
    EXPECT_THAT(g.task(w).deps, testing::ElementsAre(send));
  }
  // Streams: compute and d2d memcpy default to "compute", the rest to "comm".
  auto stream_of = [&](TaskId i) { return g.streams()[g.task(i).stream]; };
  EXPECT_EQ(stream_of(0), "compute");
  EXPECT_EQ(stream_of(16), "comm");
  EXPECT_EQ(stream_of(send), "comm");
  EXPECT_EQ(stream_of(32), "compute");
  EXPECT_EQ(g.task(32).memcpy_kind, MemcpyKind::kDeviceToDevice);
  EXPECT_EQ(stream_of(33), "comm");
  EXPECT_EQ(g.task(33).memcpy_kind, MemcpyKind::kPeer);
  EXPECT_EQ(g.task(33).peer, 6);
  EXPECT_EQ(stream_of(34), "mem");
  EXPECT_EQ(g.task(34).kind, TaskKind::kAlloc);
  EXPECT_EQ(g.task(34).bytes, GiB(10));
  EXPECT_EQ(g.task(g.tasks().size() - 1).kind, TaskKind::kFree);
  EXPECT_TRUE(g.validate(8).empty());
}

TEST(ScenarioLoader, SendRecvTagsMatch) {
  const Scenario s = load(doc(kTwoNodes, R"({"kind": "task_graph", "tasks": [
      {"id": "s", "ranks": [0, 2], "kind": "send", "peer": 7, "bytes": "1MiB", "tag": 3},
      {"id": "r1", "rank": 7, "kind": "recv", "peer": 0, "bytes": "1MiB", "tag": 3},
      {"id": "r2", "rank": 7, "kind": "recv", "peer": 2, "bytes": "1MiB", "tag": 3}]})"));
  EXPECT_EQ(s.task_graph.tasks().size(), 4u);
  EXPECT_EQ(s.task_graph.task(1).tag, 3u);
}

// ---- overrides --------------------------------------------------------------------------

TEST(ScenarioOverrides, SetsNestedKeysAndArrayElements) {
  json d = json::parse(R"({"cluster": {"nodes": [{"count": 2}, {"count": 3}]}})");
  EXPECT_EQ(apply_override(d, "cluster.nodes.1.count=64"), "");
  EXPECT_EQ(d["cluster"]["nodes"][1]["count"], 64);
  EXPECT_EQ(apply_override(d, "cluster.nodes.0.nic_bandwidth=400Gbps"), "");
  EXPECT_EQ(d["cluster"]["nodes"][0]["nic_bandwidth"], "400Gbps");
  EXPECT_EQ(apply_override(d, "workload.algorithms=[\"ring\",\"tree\"]"), "");
  EXPECT_EQ(d["workload"]["algorithms"], json::parse(R"(["ring", "tree"])"));
  EXPECT_EQ(apply_override(d, "simulation.trace=false"), "");
  EXPECT_EQ(d["simulation"]["trace"], false);
  EXPECT_EQ(apply_override(d, "cluster.fabric={\"kind\": \"torus\"}"), "");
  EXPECT_EQ(d["cluster"]["fabric"]["kind"], "torus");
  // Index == size appends.
  EXPECT_EQ(apply_override(d, "cluster.nodes.2.count=1"), "");
  EXPECT_EQ(d["cluster"]["nodes"].size(), 3u);
  // "=" inside the value belongs to the value.
  EXPECT_EQ(apply_override(d, "name=a=b"), "");
  EXPECT_EQ(d["name"], "a=b");
}

TEST(ScenarioOverrides, AppliedBeforeValidation) {
  const Scenario s = load(doc(kTwoNodes), {"cluster.nodes.0.count=4", "workload.iterations=3",
                                           "workload.algorithms=[\"ring\",\"tree\"]",
                                           "simulation.network_model=analytical"});
  EXPECT_EQ(s.cluster.num_ranks(), 16);
  EXPECT_EQ(s.collective.iterations, 3);
  EXPECT_EQ(s.collective.algorithms.size(), 2u);
  EXPECT_EQ(s.simulation.network_model, "analytical");
  EXPECT_EQ(build_collective_sweep_graph(s.collective).collectives().size(), 6u);
  // The stored document is the overridden one.
  EXPECT_EQ(s.document["cluster"]["nodes"][0]["count"], 4);
  EXPECT_EQ(s.document["simulation"]["network_model"], "analytical");
}

// ---- files ------------------------------------------------------------------------------

TEST(ScenarioLoader, LoadsAFile) {
  const std::string path = testing::TempDir() + "two_nodes.json";
  std::ofstream(path) << doc(kTwoNodes);
  const Scenario s = load_scenario_file(path, {"workload.iterations=2"});
  EXPECT_EQ(s.source, path);
  EXPECT_EQ(s.name, "two_nodes");
  EXPECT_EQ(build_collective_sweep_graph(s.collective).collectives().size(), 2u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dtsim
