// Tests of the scenario loader's error reports: each bad input names the exact JSON pointer
// and says what is wrong; several problems are reported together.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "scenarios/json_document.h"
#include "scenarios/loader.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using nlohmann::json;

std::vector<std::string> errors_of(const std::string& text,
                                   const std::vector<std::string>& overrides = {}) {
  try {
    // Plan errors come from lowering, where the plan meets the cluster.
    test_support::prepare(json::parse(text), "t.json", overrides);
  } catch (const ScenarioError& e) {
    return e.messages();
  }
  return {};
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "  " + l + "\n";
  return out.empty() ? "  (no errors)\n" : out;
}

// Some message is exactly at `pointer` and contains `phrase`.
testing::AssertionResult has_error(const std::vector<std::string>& messages,
                                   const std::string& pointer, const std::string& phrase) {
  const std::string prefix = pointer.empty() ? "t.json: " : "t.json: " + pointer + ": ";
  for (const auto& m : messages) {
    if (m.rfind(prefix, 0) == 0 && m.find(phrase) != std::string::npos) {
      return testing::AssertionSuccess();
    }
  }
  return testing::AssertionFailure() << "no error at \"" << pointer << "\" containing \"" << phrase
                                     << "\"; got:\n"
                                     << joined(messages);
}

// A document with the given cluster and workload sections (JSON text).
std::string doc(const std::string& cluster, const std::string& workload,
                const std::string& extra = "") {
  return "{\"cluster\": " + cluster + ", \"workload\": " + workload + extra + "}";
}

// Two 4-GPU nodes on one switch: 8 ranks.
const std::string kCluster = R"({
  "nodes": [{"count": 2, "device": "H100", "devices_per_node": 4, "nic_bandwidth": "400Gbps"}],
  "fabric": {"kind": "single_switch"}
})";
const std::string kSweep = R"({"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]})";

std::string cluster_with_node(const std::string& node_keys, const std::string& fabric =
                                                                R"({"kind": "single_switch"})") {
  return R"({"nodes": [{"count": 2, "device": "H100", "devices_per_node": 4, )" + node_keys +
         "}], \"fabric\": " + fabric + "}";
}

TEST(ScenarioErrors, ValidBaseDocumentLoads) {
  EXPECT_TRUE(errors_of(doc(kCluster, kSweep)).empty());
}

TEST(ScenarioErrors, ComputeShareIsAFractionOfTheDevice) {
  for (const char* bad : {"0", "1.5", "-0.5", "\"half\""}) {
    auto e = errors_of(doc(cluster_with_node(std::string(R"("compute_share": )") + bad), kSweep));
    EXPECT_TRUE(has_error(e, "/cluster/nodes/0/compute_share", "a fraction in (0, 1]")) << bad;
  }
  EXPECT_TRUE(
      errors_of(
          doc(cluster_with_node(R"("nic_bandwidth": "100Gbps", "compute_share": 0.25)"), kSweep))
          .empty());
}

TEST(ScenarioErrors, SpeedVariationAndSeed) {
  const std::string nodes = R"("nodes": [{"count": 1, "device": "H100", "devices_per_node": 2, "nics": 0}])";
  auto e = errors_of(doc("{" + nodes + R"(, "speed_variation": 1, "speed_seed": -1})", kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/speed_variation", "expected a number in [0, 1)"));
  EXPECT_TRUE(has_error(e, "/cluster/speed_seed", ""));
  EXPECT_TRUE(errors_of(doc("{" + nodes + R"(, "speed_variation": 0, "speed_seed": 7})", kSweep)).empty());
}

// Granularity cuts a training step's passes; a workload file's tasks are its own.
TEST(ScenarioErrors, GranularityOnlyForTraining) {
  const auto e = errors_of(doc(kCluster, kSweep, R"(, "simulation": {"granularity": "layer"})"));
  EXPECT_TRUE(has_error(e, "/simulation/granularity", "applies to training scenarios only"));
  const auto bad = errors_of(doc(kCluster, kSweep, R"(, "simulation": {"granularity": "op"})"));
  EXPECT_TRUE(has_error(bad, "/simulation/granularity", "chunk"));
}

// ---- units and basic types ------------------------------------------------------------

TEST(ScenarioErrors, UnknownUnit) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "40OGbps")"), kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_bandwidth", "unknown unit \"OGbps\""));
}

TEST(ScenarioErrors, UnitWithoutNumber) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "fastGbps")"), kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_bandwidth", "does not start with a number"));
}

TEST(ScenarioErrors, QuantityGivenAsNumber) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": 400)"), kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_bandwidth",
                        "expected a bandwidth such as \"400Gbps\", got number 400"));
}

TEST(ScenarioErrors, NegativeDuration) {
  auto e = errors_of(
      doc(cluster_with_node(R"("nic_bandwidth": "400Gbps", "nic_latency": "-1us")"), kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_latency", "non-negative"));
}

TEST(ScenarioErrors, NegativeCount) {
  auto e = errors_of(doc(R"({"nodes": [{"count": -1, "device": "H100", "devices_per_node": 4,
                                        "nic_bandwidth": "400Gbps"}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/count", "-1 is out of range (expected an integer in 1.."));
}

TEST(ScenarioErrors, WrongType) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 1, "device": "H100", "devices_per_node": "8",
                                        "nic_bandwidth": "400Gbps"}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/devices_per_node",
                        "expected an integer in 1..1024, got string \"8\""));
}

TEST(ScenarioErrors, MissingRequiredKey) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 1, "devices_per_node": 8, "nics": 0}]})", kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/device", "missing required key \"device\""));
}

TEST(ScenarioErrors, UnknownKeyWithSuggestion) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "400Gbps", "nic_bandwdth": "1Gbps")"),
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_bandwdth",
                        "unknown key \"nic_bandwdth\" (did you mean \"nic_bandwidth\"?)"));
}

TEST(ScenarioErrors, UnknownTopLevelKey) {
  auto e = errors_of(doc(kCluster, kSweep, R"(, "simulaton": {})"));
  EXPECT_TRUE(has_error(e, "/simulaton", "did you mean \"simulation\""));
}

TEST(ScenarioErrors, DocumentNotAnObject) {
  auto e = errors_of("[1, 2]");
  EXPECT_TRUE(has_error(e, "", "/: the document must be an object, got an array"));
}

// ---- nodes and devices ----------------------------------------------------------------

TEST(ScenarioErrors, UnknownDevice) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 1, "device": "H10", "devices_per_node": 8,
                                        "nic_bandwidth": "400Gbps"}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/device", "unknown device \"H10\" (did you mean \"H100\"?"));
}

TEST(ScenarioErrors, NicBandwidthRequiredWithNics) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_bandwidth", "missing required key \"nic_bandwidth\""));
}

TEST(ScenarioErrors, NodesWithoutNicsCannotJoinAFabric) {
  auto e = errors_of(doc(cluster_with_node(R"("nics": 0)"), kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nics", "must be at least 1"));
}

TEST(ScenarioErrors, NvSwitchNeedsNvLink) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 1, "device": "P40", "devices_per_node": 4,
                                        "intra": "nvswitch", "nics": 0}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/intra", "needs NVLink, and device \"P40\" has none"));
}

TEST(ScenarioErrors, IntraBandwidthWithPcie) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 1, "device": "H100", "devices_per_node": 4,
                                        "intra": "pcie", "intra_bandwidth": "100GB/s", "nics": 0}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/intra_bandwidth",
                        "applies only when intra is nvswitch or nvlink_mesh"));
}

TEST(ScenarioErrors, CustomDeviceShadowsCatalog) {
  auto e = errors_of(doc(R"({"devices": [{"name": "H100", "base": "H100"}],
    "nodes": [{"count": 1, "device": "H100", "devices_per_node": 1, "nics": 0}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/devices/0/name", "may not shadow"));
}

TEST(ScenarioErrors, CustomDeviceWithoutBaseNeedsFigures) {
  auto e = errors_of(doc(R"({"devices": [{"name": "X1", "peak": {"fp32": "10TFLOPS"},
                                          "memory_bandwidth": "1TB/s", "pcie_bandwidth": "32GB/s"}],
    "nodes": [{"count": 1, "device": "X1", "devices_per_node": 1, "nics": 0}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/devices/0/memory", "missing required key \"memory\""));
  // The node naming the broken device does not add "unknown device" on top.
  for (const auto& m : e) EXPECT_EQ(m.find("unknown device"), std::string::npos) << m;
}

TEST(ScenarioErrors, CustomDeviceUnknownDtype) {
  auto e = errors_of(doc(R"({"devices": [{"name": "X1", "base": "A100-80GB", "peak": {"bf17": "1TFLOPS"}}],
    "nodes": [{"count": 1, "device": "X1", "devices_per_node": 1, "nics": 0}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/devices/0/peak/bf17", "unknown key \"bf17\""));
}

// A custom device based on H100 with the given `efficiency` object (JSON text).
std::string device_with_efficiency(const std::string& efficiency) {
  return R"({"devices": [{"name": "X1", "base": "H100", "efficiency": )" + efficiency + R"(}],
    "nodes": [{"count": 1, "device": "X1", "devices_per_node": 1, "nics": 0}]})";
}

TEST(ScenarioErrors, CustomDeviceEfficiencyOutOfRange) {
  auto e = errors_of(doc(device_with_efficiency(R"({"gemm_max": 1.5, "attention_factor": 0,
      "conv_factor": -0.5, "memory_bandwidth_fraction": 2, "comm_compute_slowdown": 1,
      "nvlink_efficiency": 0, "pcie_efficiency": 1.2, "gemm_max_fp8": 0, "gemm_half_dim": 0, "gemm_half_flops": "0GFLOP",
      "sustained_compute_fraction": 1.1})"),
                         kSweep));
  const std::string at = "/cluster/devices/0/efficiency/";
  const std::string fraction = " is out of range (expected a fraction in (0, 1])";
  EXPECT_TRUE(has_error(e, at + "gemm_max", "1.5" + fraction));
  EXPECT_TRUE(has_error(e, at + "attention_factor", "0" + fraction));
  EXPECT_TRUE(has_error(e, at + "conv_factor", "-0.5" + fraction));
  EXPECT_TRUE(has_error(e, at + "memory_bandwidth_fraction", "2" + fraction));
  EXPECT_TRUE(has_error(e, at + "nvlink_efficiency", "0" + fraction));
  EXPECT_TRUE(has_error(e, at + "gemm_max_fp8", "0" + fraction));
  EXPECT_TRUE(has_error(e, at + "pcie_efficiency", "1.2" + fraction));
  EXPECT_TRUE(has_error(e, at + "sustained_compute_fraction", "1.1" + fraction));
  EXPECT_TRUE(has_error(e, at + "comm_compute_slowdown",
                        "1 is out of range (expected a number in [0, 1))"));
  EXPECT_TRUE(has_error(e, at + "gemm_half_dim", "0 is out of range (expected a positive number)"));
  EXPECT_TRUE(has_error(e, at + "gemm_half_flops", "must be a positive FLOP count"));
  // The node naming the broken device does not add "unknown device" on top.
  for (const auto& m : e) EXPECT_EQ(m.find("unknown device"), std::string::npos) << m;
}

TEST(ScenarioErrors, CustomDeviceEfficiencyWrongTypesAndKeys) {
  auto e = errors_of(doc(device_with_efficiency(R"({"gemm_max": "0.8", "kernel_launch": "-1us",
      "gemm_half_flops": 1e9, "gemm_mx": 0.8,
      "collective_protocols": {"Simple": {"network_step": "-2us", "base": 5, "bandwidth_fraction": 1.5},
                               "LL129": {}}})"),
                         kSweep));
  const std::string at = "/cluster/devices/0/efficiency/";
  EXPECT_TRUE(has_error(e, at + "gemm_max", "expected a fraction in (0, 1], got string \"0.8\""));
  EXPECT_TRUE(has_error(e, at + "kernel_launch", "non-negative"));
  const std::string simple = at + "collective_protocols/Simple/";
  EXPECT_TRUE(has_error(e, simple + "network_step", "non-negative"));
  EXPECT_TRUE(has_error(e, simple + "base", "expected a duration such as"));
  EXPECT_TRUE(has_error(e, simple + "bandwidth_fraction", "expected a fraction in [0, 1]"));
  EXPECT_TRUE(has_error(e, at + "collective_protocols/LL129",
                        "unknown key \"LL129\" (did you mean \"LL128\"?)"));
  EXPECT_TRUE(has_error(e, at + "gemm_half_flops", "expected a FLOP count such as"));
  EXPECT_TRUE(
      has_error(e, at + "gemm_mx", "unknown key \"gemm_mx\" (did you mean \"gemm_max\"?)"));
  auto tiles = errors_of(doc(device_with_efficiency(R"({"compute_units": -1, "gemm_tile_m": 0,
      "gemm_tile_n": 1.5})"),
                             kSweep));
  EXPECT_TRUE(has_error(tiles, at + "compute_units", ""));
  EXPECT_TRUE(has_error(tiles, at + "gemm_tile_m", ""));
  EXPECT_TRUE(has_error(tiles, at + "gemm_tile_n", ""));
  auto not_object = errors_of(doc(device_with_efficiency("0.8"), kSweep));
  EXPECT_TRUE(has_error(not_object, "/cluster/devices/0/efficiency",
                        "expected an object, got number 0.8"));
}

TEST(ScenarioErrors, TooManyRanks) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 1000000, "device": "H100", "devices_per_node": 8,
                                        "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "fat_tree"}})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster", "at most 1048576"));
}

// ---- fabrics ----------------------------------------------------------------------------

TEST(ScenarioErrors, UnknownFabricKind) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "400Gbps")", R"({"kind": "fat_tre"})"),
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/kind", "unknown fabric kind \"fat_tre\" (did you mean \"fat_tree\"?"));
}

TEST(ScenarioErrors, FabricRequiredForSeveralNodes) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 2, "device": "H100", "devices_per_node": 8,
                                        "nic_bandwidth": "400Gbps"}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/fabric", "missing required key \"fabric\""));
}

TEST(ScenarioErrors, FabricNoneHoldsOneNode) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "400Gbps")", R"({"kind": "none"})"),
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/kind", "holds exactly one node"));
}

TEST(ScenarioErrors, TorusDimsMismatch) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "400Gbps")",
                                           R"({"kind": "torus", "torus_dims": [2, 3]})"),
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/torus_dims", "hold 6 nodes, but the region has 2"));
}

TEST(ScenarioErrors, TorusDimsCount) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "400Gbps")",
                                           R"({"kind": "torus", "torus_dims": [1, 1, 1, 2]})"),
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/torus_dims", "got 4 dimension(s)"));
}

TEST(ScenarioErrors, ThinTreeWithoutUplink) {
  auto e = errors_of(doc(R"({"nodes": [{"count": 4, "device": "H100", "devices_per_node": 8,
                                        "nic_bandwidth": "400Gbps"}],
                            "fabric": {"kind": "thin_tree", "nodes_per_group": 2}})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/group_uplink", "missing required key \"group_uplink\""));
}

TEST(ScenarioErrors, FabricKeyForAnotherKind) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "400Gbps")",
                                           R"({"kind": "single_switch", "nodes_per_leaf": 4})"),
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/nodes_per_leaf",
                        "applies only to fabric kind fat_tree, not single_switch"));
}

TEST(ScenarioErrors, OversubscriptionBelowOne) {
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "400Gbps")",
                                           R"({"kind": "fat_tree", "oversubscription": 0.5})"),
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/oversubscription", "expected a number in [1, 1000]"));
}

// ---- regions and WAN --------------------------------------------------------------------

std::string region(const std::string& name) {
  return R"({"name": ")" + name + R"(", "gateway_bandwidth": "400Gbps",
    "nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nic_bandwidth": "400Gbps"}]})";
}

TEST(ScenarioErrors, UnknownRegionInWan) {
  auto e = errors_of(doc("{\"regions\": [" + region("us-east") + ", " + region("eu-west") + R"(],
    "wan": [{"between": ["us-east", "eu-wst"], "bandwidth": "10Gbps", "latency": "30ms"}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/wan/0/between/1", "unknown region \"eu-wst\" (did you mean \"eu-west\"?"));
}

TEST(ScenarioErrors, DisconnectedRegions) {
  auto e = errors_of(doc("{\"regions\": [" + region("a") + ", " + region("b") + ", " + region("c") + R"(],
    "wan": [{"between": ["a", "b"], "bandwidth": "10Gbps", "latency": "30ms"}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/wan", "not all connected: {a, b} | {c}"));
}

TEST(ScenarioErrors, DuplicateRegionName) {
  auto e = errors_of(doc("{\"regions\": [" + region("a") + ", " + region("a") + R"(],
    "wan": [{"between": ["a", "a"], "bandwidth": "10Gbps", "latency": "30ms"}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/regions/1/name", "duplicate region name \"a\" (also at /cluster/regions/0/name)"));
}

TEST(ScenarioErrors, WanLinkToItself) {
  auto e = errors_of(doc("{\"regions\": [" + region("a") + ", " + region("b") + R"(],
    "wan": [{"between": ["a", "a"], "bandwidth": "10Gbps", "latency": "30ms"}]})",
                         kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/wan/0/between", "joins two different regions"));
}

TEST(ScenarioErrors, WanRequiredWithSeveralRegions) {
  auto e = errors_of(doc("{\"regions\": [" + region("a") + ", " + region("b") + "]}", kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/wan", "missing required key \"wan\""));
}

TEST(ScenarioErrors, NodesAndRegionsTogether) {
  auto e = errors_of(doc("{\"regions\": [" + region("a") + R"(], "nodes": []})", kSweep));
  EXPECT_TRUE(has_error(e, "/cluster/nodes", "cannot be combined with \"regions\""));
}

// ---- collective sweep -------------------------------------------------------------------

TEST(ScenarioErrors, UnknownOp) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["allreduce"], "sizes": ["1MiB"]})"));
  EXPECT_TRUE(has_error(e, "/workload/ops/0", "unknown collective op \"allreduce\" (did you mean \"all_reduce\"?"));
}

TEST(ScenarioErrors, UnknownAlgorithm) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["all_reduce"],
                                       "algorithms": ["ring", "rnig2"], "sizes": ["1MiB"]})"));
  EXPECT_TRUE(has_error(e, "/workload/algorithms/1", "unknown collective algorithm \"rnig2\""));
}

TEST(ScenarioErrors, AlgorithmNotApplicable) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["all_reduce"],
                                       "algorithms": ["ring", "halving_doubling"], "sizes": ["1MiB"],
                                       "group": [0, 1, 2, 3, 4, 5]})"));
  EXPECT_TRUE(has_error(e, "/workload/algorithms/1",
                        "halving_doubling does not apply to all_reduce on this group: "));
  EXPECT_TRUE(has_error(e, "/workload/algorithms/1", "power-of-two"));
  EXPECT_EQ(e.size(), 1u);
}

TEST(ScenarioErrors, AlgorithmDoesNotImplementOp) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["all_to_all"],
                                       "algorithms": ["ring"], "sizes": ["1MiB"]})"));
  EXPECT_TRUE(has_error(e, "/workload/algorithms/0", "ring does not implement all_to_all"));
}

TEST(ScenarioErrors, AutoFindsNoAlgorithm) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["send_recv"],
                                       "sizes": ["1MiB"], "group": [0, 1, 2]})"));
  EXPECT_TRUE(has_error(e, "/workload/ops/0", "no algorithm applies to send_recv"));
}

TEST(ScenarioErrors, RankOutOfRange) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["all_reduce"],
                                       "sizes": ["1MiB"], "group": [0, 99]})"));
  EXPECT_TRUE(has_error(e, "/workload/group/1", "rank 99 is out of range (the cluster has 8 ranks: 0..7)"));
}

TEST(ScenarioErrors, DuplicateRank) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["all_reduce"],
                                       "sizes": ["1MiB"], "group": [1, 2, 1]})"));
  EXPECT_TRUE(has_error(e, "/workload/group/2", "duplicate rank 1 (also at /workload/group/0)"));
}

TEST(ScenarioErrors, RangeBeyondCluster) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"],
                                       "group": {"first": 0, "count": 8, "stride": 2}})"));
  EXPECT_TRUE(has_error(e, "/workload/group", "reaches rank 14"));
}

TEST(ScenarioErrors, SizesFactorBelowTwo) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["all_reduce"],
                                       "sizes": {"from": "1KiB", "to": "1MiB", "factor": 1}})"));
  EXPECT_TRUE(has_error(e, "/workload/sizes/factor", "1 is out of range (expected an integer >= 2)"));
}

TEST(ScenarioErrors, SizesRangeBackwards) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["all_reduce"],
                                       "sizes": {"from": "1MiB", "to": "1KiB"}})"));
  EXPECT_TRUE(has_error(e, "/workload/sizes/to", "must be >= from"));
}

TEST(ScenarioErrors, RootOutOfRange) {
  auto e = errors_of(doc(kCluster, R"({"kind": "collective", "ops": ["broadcast"],
                                       "sizes": ["1MiB"], "group": [0, 1], "root": 2})"));
  EXPECT_TRUE(has_error(e, "/workload/root", "root 2 is not an index into the group"));
}

TEST(ScenarioErrors, UnknownWorkloadKind) {
  auto e = errors_of(doc(kCluster, R"({"kind": "sweep"})"));
  EXPECT_TRUE(has_error(e, "/workload/kind", "unknown workload kind \"sweep\""));
}

// ---- task graphs ------------------------------------------------------------------------

std::string graph(const std::string& tasks, const std::string& collectives = "[]") {
  return R"({"kind": "task_graph", "collectives": )" + collectives + R"(, "tasks": )" + tasks + "}";
}

TEST(ScenarioErrors, PipelineTransfersOfSendsAndRecvs) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "s", "rank": 0, "kind": "send", "peer": 1, "bytes": "1MiB",
     "moves": {"tensor": "weights", "micro_batch": 0, "chunk": 0}},
    {"id": "r", "rank": 1, "kind": "recv", "peer": 0, "bytes": "1MiB",
     "moves": {"tensor": "activations", "micro_batch": -1}},
    {"id": "c", "rank": 0, "kind": "compute", "duration": "1ms",
     "moves": {"tensor": "activations", "micro_batch": 0, "chunk": 0}}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/moves/tensor", "activation_gradients")) << joined(e);
  EXPECT_TRUE(has_error(e, "/workload/tasks/1/moves/micro_batch", "")) << joined(e);
  EXPECT_TRUE(has_error(e, "/workload/tasks/1/moves/chunk", "missing")) << joined(e);
  EXPECT_TRUE(has_error(e, "/workload/tasks/2/moves", "send and recv")) << joined(e);
  // Well formed, but the send and the recv it meets disagree.
  auto mismatched = errors_of(doc(kCluster, graph(R"([
    {"id": "s", "rank": 0, "kind": "send", "peer": 1, "bytes": "1MiB",
     "moves": {"tensor": "activations", "micro_batch": 0, "chunk": 0}},
    {"id": "r", "rank": 1, "kind": "recv", "peer": 0, "bytes": "1MiB",
     "moves": {"tensor": "activations", "micro_batch": 1, "chunk": 0}}])")));
  EXPECT_TRUE(has_error(mismatched, "/workload/tasks", "move different pipeline tensors"))
      << joined(mismatched);
}

TEST(ScenarioErrors, LocalSgdGraphFilesComeWithTheirPeriod) {
  auto alone = errors_of(doc(kCluster, R"({"kind": "task_graph", "graph_file": "g.tasks.jsonl",
                                           "sync_every": 4})"));
  EXPECT_TRUE(has_error(alone, "/workload/local_graph_file", "sync_every")) << joined(alone);
  auto unweighed = errors_of(doc(kCluster, R"({"kind": "task_graph", "graph_file": "g.tasks.jsonl",
                                               "local_graph_file": "l.tasks.jsonl"})"));
  EXPECT_TRUE(has_error(unweighed, "/workload/sync_every", "missing")) << joined(unweighed);
  auto one = errors_of(doc(kCluster, R"({"kind": "task_graph", "graph_file": "g.tasks.jsonl",
                                         "local_graph_file": "l.tasks.jsonl", "sync_every": 1})"));
  EXPECT_TRUE(has_error(one, "/workload/sync_every", "2")) << joined(one);
  auto inline_tasks = errors_of(doc(kCluster, R"({"kind": "task_graph", "tasks": [],
                                                  "sync_every": 4})"));
  EXPECT_TRUE(has_error(inline_tasks, "/workload/sync_every", "graph_file"))
      << joined(inline_tasks);
}

// A graph file without a size (a device, a pipe) was read as one endless line.
TEST(ScenarioErrors, AGraphFileWithoutASizeStopsAtTheInputLimit) {
  const uint64_t before = max_input_bytes();
  set_max_input_bytes(1 << 20);
  auto e = errors_of(doc(kCluster, R"({"kind": "task_graph", "graph_file": "/dev/zero"})"));
  set_max_input_bytes(before);
  EXPECT_TRUE(has_error(e, "/workload/graph_file", "/dev/zero: the input has more than the limit"))
      << joined(e);
}

TEST(ScenarioErrors, ExecutorFieldsOfCollectivesAndBuffers) {
  const std::string calls = R"([
    {"name": "g", "op": "all_gather", "bytes": "1MiB", "reduce": "sum"},
    {"name": "r", "op": "all_reduce", "bytes": "1MiB", "dtype": "bf17", "reduce": "mean"}])";
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "a", "rank": 0, "kind": "alloc", "bytes": "1MiB", "buffer": 1, "category": "weights"},
    {"id": "f", "rank": 0, "kind": "free", "bytes": "1MiB", "buffer": 2, "deps": ["a"]},
    {"id": "c", "rank": 0, "kind": "compute", "duration": "1ms", "buffer": 3},
    {"id": "m", "rank": 1, "kind": "alloc", "bytes": "1MiB", "category": "heap"}])",
                                         calls)));
  EXPECT_TRUE(has_error(e, "/workload/collectives/0/reduce", "applies only to a reducing op"));
  EXPECT_TRUE(has_error(e, "/workload/collectives/1/dtype", "bf16"));
  EXPECT_TRUE(has_error(e, "/workload/collectives/1/reduce", "avg"));
  EXPECT_TRUE(has_error(e, "/workload/tasks/2/buffer", "alloc and free"));
  EXPECT_TRUE(has_error(e, "/workload/tasks/3/category", "optimizer_states"));
  // A well-formed graph whose free names a buffer nobody allocated.
  auto unpaired = errors_of(doc(kCluster, graph(R"([
    {"id": "a", "rank": 0, "kind": "alloc", "bytes": "1MiB", "buffer": 1},
    {"id": "f", "rank": 0, "kind": "free", "bytes": "1MiB", "buffer": 2, "deps": ["a"]}])")));
  EXPECT_TRUE(
      has_error(unpaired, "/workload/tasks", "frees buffer 2, which its rank does not hold"))
      << joined(unpaired);
}

TEST(ScenarioErrors, DepOnUnknownId) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "fwd", "ranks": "all", "kind": "compute", "duration": "1ms"},
    {"id": "bwd", "ranks": "all", "kind": "compute", "duration": "1ms", "deps": ["fdw"]}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/1/deps/0", "unknown task id \"fdw\" (did you mean \"fwd\"?)"));
}

TEST(ScenarioErrors, DepOnLaterId) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "fwd", "ranks": "all", "kind": "compute", "duration": "1ms", "deps": ["bwd"]},
    {"id": "bwd", "ranks": "all", "kind": "compute", "duration": "1ms"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/deps/0", "is defined later (at /workload/tasks/1)"));
}

TEST(ScenarioErrors, DuplicateTaskId) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "x", "rank": 0, "kind": "compute", "duration": "1ms"},
    {"id": "x", "rank": 1, "kind": "compute", "duration": "1ms"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/1/id", "duplicate task id \"x\" (also at /workload/tasks/0)"));
}

TEST(ScenarioErrors, DepWithoutCopyOnTheSameRank) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "a", "ranks": [0, 1], "kind": "compute", "duration": "1ms"},
    {"id": "b", "ranks": [1, 2], "kind": "compute", "duration": "1ms", "deps": ["a"]}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/1/deps/0", "but not on rank 2"));
}

TEST(ScenarioErrors, CollectiveTaskRanksDifferFromGroup) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "ar", "ranks": [0, 1, 2], "kind": "collective", "collective": "grads"}])",
                                         R"([{"name": "grads", "op": "all_reduce", "group": [0, 1, 2, 3],
                                              "bytes": "1MiB"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/ranks", "must be exactly its collective's group"));
}

TEST(ScenarioErrors, UnknownCollectiveName) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "ar", "ranks": "all", "kind": "collective", "collective": "gradz"}])",
                                         R"([{"name": "grads", "op": "all_reduce", "bytes": "1MiB"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/collective", "unknown collective \"gradz\""));
}

TEST(ScenarioErrors, CollectiveDefinitionNotApplicable) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "ar", "ranks": [0, 1, 2], "kind": "collective", "collective": "grads"}])",
                                         R"([{"name": "grads", "op": "all_reduce", "algorithm": "halving_doubling",
                                              "group": [0, 1, 2], "bytes": "1MiB"}])")));
  EXPECT_TRUE(has_error(e, "/workload/collectives/0/algorithm", "halving_doubling does not apply"));
}

TEST(ScenarioErrors, SendWithoutRecv) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "s", "rank": 0, "kind": "send", "peer": 1, "bytes": "1MiB"},
    {"id": "r", "rank": 1, "kind": "recv", "peer": 0, "bytes": "1MiB", "tag": 7}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0", "send from rank 0 to rank 1 with tag 0 has no matching recv"));
  EXPECT_TRUE(has_error(e, "/workload/tasks/1", "recv from rank 0 to rank 1 with tag 7 has no matching send"));
}

TEST(ScenarioErrors, PeerIsOwnRank) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "s", "rank": 3, "kind": "send", "peer": 3, "bytes": "1MiB"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/peer", "is one of the task's own ranks"));
}

TEST(ScenarioErrors, PeerOutOfRange) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "s", "rank": 3, "kind": "send", "peer": 30, "bytes": "1MiB"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/peer", "rank 30 is out of range"));
}

TEST(ScenarioErrors, KeyForAnotherTaskKind) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "c", "rank": 0, "kind": "compute", "duration": "1ms", "peer": 1}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/peer", "applies only to send, recv and memcpy tasks, not compute"));
}

TEST(ScenarioErrors, ComputeWithDurationAndFlops) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "c", "rank": 0, "kind": "compute", "duration": "1ms", "flops": "1TFLOP"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0", "give either \"duration\" or \"flops\", not both"));
}

TEST(ScenarioErrors, RankAndRanksTogether) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "c", "rank": 0, "ranks": "all", "kind": "compute", "duration": "1ms"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0", "give either \"rank\" (one rank) or \"ranks\""));
}

// bf16 on a P100 runs at its fp32 rate; fp64 on a device with only an fp16 peak has no
// math that can carry it.
TEST(ScenarioErrors, DtypeWithoutPeak) {
  const std::string task = R"([{"id": "c", "ranks": "all", "kind": "compute", "flops": "1TFLOP",
                                 "dtype": "DTYPE"}])";
  const auto with = [&](const std::string& dtype) {
    std::string t = task;
    t.replace(t.find("DTYPE"), 5, dtype);
    return t;
  };
  EXPECT_TRUE(
      errors_of(
          doc(R"({"nodes": [{"count": 1, "device": "P100", "devices_per_node": 2, "nics": 0}]})",
              graph(with("bf16"))))
          .empty());
  auto e =
      errors_of(doc(R"({"devices": [{"name": "X1", "peak": {"fp16": "10TFLOPS"}, "memory": "16GiB",
                                          "memory_bandwidth": "1TB/s", "pcie_bandwidth": "32GB/s"}],
    "nodes": [{"count": 1, "device": "X1", "devices_per_node": 1, "nics": 0}]})",
                    graph(with("fp64"))));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/dtype", "device \"X1\" has no fp64 peak FLOP rate"));
}

TEST(ScenarioErrors, MemcpyPeerNeedsPeer) {
  auto e = errors_of(doc(kCluster, graph(R"([
    {"id": "m", "rank": 0, "kind": "memcpy", "direction": "peer", "bytes": "1MiB"}])")));
  EXPECT_TRUE(has_error(e, "/workload/tasks/0/peer", "missing required key \"peer\""));
}

// ---- simulation -------------------------------------------------------------------------

TEST(ScenarioErrors, UnknownNetworkModel) {
  auto e = errors_of(doc(kCluster, kSweep, R"(, "simulation": {"network_model": "packet"})"));
  EXPECT_TRUE(has_error(e, "/simulation/network_model", "unknown network model \"packet\""));
  EXPECT_TRUE(has_error(e, "/simulation/network_model", "analytical"));
}

TEST(ScenarioErrors, TraceNotABoolean) {
  auto e = errors_of(doc(kCluster, kSweep, R"(, "simulation": {"trace": "yes"})"));
  EXPECT_TRUE(has_error(e, "/simulation/trace", "expected true or false"));
}

// ---- overrides and files ----------------------------------------------------------------

TEST(ScenarioErrors, BadOverrideSyntax) {
  auto e = errors_of(doc(kCluster, kSweep), {"workload.iterations"});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].rfind("t.json: --set workload.iterations: expected a.b.c=VALUE", 0), 0u) << e[0];
  json empty = json::object();
  EXPECT_NE(apply_override(empty, "a..b=1").find("empty segment"), std::string::npos);
}

TEST(ScenarioErrors, OverrideIntoANonArray) {
  auto e = errors_of(doc(kCluster, kSweep), {"workload.kind.0=x"});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("workload.kind is a string, not an object or array"), std::string::npos) << e[0];
}

TEST(ScenarioErrors, OverrideIndexOutOfRange) {
  auto e = errors_of(doc(kCluster, kSweep), {"cluster.nodes.5.count=4"});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("index 5 is out of range for the array cluster.nodes"), std::string::npos) << e[0];
}

TEST(ScenarioErrors, OverrideNonIndexIntoArray) {
  json d = json::parse(doc(kCluster, kSweep));
  EXPECT_NE(apply_override(d, "cluster.nodes.first.count=4").find("\"first\" is not an index"),
            std::string::npos);
}

TEST(ScenarioErrors, OverriddenValueIsValidated) {
  auto e = errors_of(doc(kCluster, kSweep), {"cluster.nodes.0.nic_bandwidth=40OGbps"});
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_bandwidth", "unknown unit \"OGbps\""));
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ScenarioErrors, InvalidJsonNamesLineAndColumn) {
  const std::string path = write_temp("bad_syntax.json", "{\n  \"cluster\": {},\n  \"workload\": {,}\n}\n");
  try {
    load_scenario_file(path);
    FAIL() << "loaded";
  } catch (const ScenarioError& e) {
    ASSERT_EQ(e.messages().size(), 1u);
    EXPECT_EQ(e.messages()[0].rfind(path + ": invalid JSON at line 3, column 16: ", 0), 0u)
        << e.messages()[0];
  }
  std::remove(path.c_str());
}

TEST(ScenarioErrors, MissingFile) {
  try {
    load_scenario_file("/nonexistent/dir/scenario.json");
    FAIL() << "loaded";
  } catch (const ScenarioError& e) {
    ASSERT_EQ(e.messages().size(), 1u);
    EXPECT_NE(e.messages()[0].find("/nonexistent/dir/scenario.json: cannot read the file"),
              std::string::npos);
  }
}

// ---- several errors at once -------------------------------------------------------------

TEST(ScenarioErrors, AllErrorsAreReportedTogether) {
  auto e = errors_of(R"({
    "cluster": {
      "nodes": [{"count": 2, "device": "H100", "devices_per_node": 4, "nic_bandwidth": "40OGbps",
                 "nic_latncy": "1us"}],
      "fabric": {"kind": "fat_tree", "oversubscription": 0}
    },
    "workload": {"kind": "collective", "ops": ["all_reduce", "alltoall"],
                 "sizes": {"from": "1KiB", "to": "1MiB", "factor": 1}, "iterations": 0},
    "simulation": {"network_model": "flows"}
  })");
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_bandwidth", "unknown unit"));
  EXPECT_TRUE(has_error(e, "/cluster/nodes/0/nic_latncy", "did you mean \"nic_latency\""));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/oversubscription", "expected a number in [1, 1000]"));
  EXPECT_TRUE(has_error(e, "/workload/ops/1", "unknown collective op"));
  EXPECT_TRUE(has_error(e, "/workload/sizes/factor", "out of range"));
  EXPECT_TRUE(has_error(e, "/workload/iterations", "out of range"));
  EXPECT_TRUE(has_error(e, "/simulation/network_model", "did you mean \"flow\""));
  EXPECT_EQ(e.size(), 7u) << joined(e);
}

TEST(ScenarioErrors, BrokenClusterDoesNotCascadeIntoRankErrors) {
  // The cluster is invalid, so the group's ranks cannot be checked; only the cluster's
  // own error is reported, not "rank 99 is out of range".
  auto e = errors_of(doc(cluster_with_node(R"("nic_bandwidth": "400Gbps")", R"({"kind": "torus"})"),
                         R"({"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"],
                             "group": [0, 99]})"));
  EXPECT_TRUE(has_error(e, "/cluster/fabric/torus_dims", "missing required key"));
  EXPECT_EQ(e.size(), 1u) << joined(e);
}

TEST(ScenarioErrorsApi, WhatJoinsTheMessages) {
  const ScenarioError error("s.json", {{"/a", "one"}, {"", "two"}});
  EXPECT_STREQ(error.what(), "s.json: /a: one\ns.json: two");
  EXPECT_EQ(error.messages(), (std::vector<std::string>{"s.json: /a: one", "s.json: two"}));
  EXPECT_EQ(error.problems()[0].pointer, "/a");
}

// A plan error reaches the caller with its key as a pointer, not inside its text.
TEST(ScenarioErrorsApi, PlanProblemsKeepTheirPointers) {
  try {
    test_support::prepare(json::parse(R"({
      "cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}]},
      "model": {"preset": "gpt3-1.3b", "layers": 2},
      "training": {"global_batch": 8, "micro_batch": 1},
      "parallelism": {"tp": 4, "pp": 2, "virtual_stages": 2}})"));
    FAIL() << "expected an error";
  } catch (const ScenarioError& e) {
    ASSERT_EQ(e.problems().size(), 1u) << e.what();
    EXPECT_EQ(e.problems()[0].pointer, "/parallelism/virtual_stages");
    EXPECT_EQ(e.problems()[0].message.rfind("2 needs \"schedule\"", 0), 0u) << e.what();
    EXPECT_EQ(e.source(), "t.json");
  }
}

TEST(ScenarioErrorsApi, DottedKeysBecomePointers) {
  EXPECT_EQ(problem_at("parallelism.tp_shares", "x").pointer, "/parallelism/tp_shares");
  EXPECT_EQ(problem_at("parallelism", "x").pointer, "/parallelism");
}

}  // namespace
}  // namespace dtsim
