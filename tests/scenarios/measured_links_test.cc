// Measured links in place of the catalog's: the CPU node's intra-node link and protocol
// take the fit's figures, and the simulator then runs each calibrated collective in the
// time the fit's closed form gives, so the figures mean in a run what they meant when fitted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "calibration/cost_database.h"
#include "calibration/link_calibration.h"
#include "runner/measured_links.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"
#include "tests/calibration/measured_figures.h"

namespace dtsim {
namespace {

Scenario two_cpu_sweep(const std::string& op, const std::string& algorithm) {
  return load_scenario(nlohmann::json::parse(R"({
    "name": "two-cpus",
    "cluster": {"nodes": [{"count": 1, "device": "CPU", "devices_per_node": 2, "nic_bandwidth": "10Gbps"}],
                "fabric": {"kind": "none"}},
    "workload": {"kind": "collective", "ops": [")" +
                                             op + R"("], "algorithms": [")" + algorithm + R"("],
                 "sizes": {"from": "64KiB", "to": "16MiB", "factor": 16}, "group": "all"},
    "simulation": {"network_model": "flow"}})"),
                       "<two-cpus>");
}

calibration::LinkCalibration measured() {
  calibration::LinkCalibration l;
  l.ranks = 2;
  l.library = "Open MPI v4.1.4";
  l.fit.base = Duration::ns(2600);
  l.fit.hop = Duration::zero();
  l.fit.bandwidth = Bandwidth::gb_per_s(5.4);
  return l;
}

TEST(MeasuredLinks, ReplaceTheIntraNodeFiguresOfTheDevicesNodesOnly) {
  Scenario s = two_cpu_sweep("all_gather", "ring");
  const std::vector<MeasuredLinkClass> applied = use_measured_links(s, {measured()}, "CPU");
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].device, "CPU");
  EXPECT_EQ(applied[0].link_class, "intra_node");
  const NodeGroupSpec& g = s.cluster_spec.regions[0].node_groups[0];
  EXPECT_EQ(g.pcie_bandwidth, Bandwidth::gb_per_s(5.4));
  EXPECT_EQ(g.pcie_latency, Duration::zero());
  EXPECT_EQ(g.pcie_efficiency, 1.0);
  const ProtocolTable& p = s.cluster.devices[0].spec->efficiency.collective_protocols;
  EXPECT_EQ(costs_of(p, CollectiveProtocol::kSimple).base, Duration::ns(2600));
  EXPECT_EQ(costs_of(p, CollectiveProtocol::kSimple).bandwidth_fraction, 1.0);
  EXPECT_EQ(costs_of(p, CollectiveProtocol::kLL).bandwidth_fraction, 0.0);
  // The catalog's device is copied, not changed.
  Scenario other = two_cpu_sweep("all_gather", "ring");
  EXPECT_NE(costs_of(other.cluster.devices[0].spec->efficiency.collective_protocols,
                     CollectiveProtocol::kSimple)
                .base,
            Duration::ns(2600));
  // Another device's database changes nothing.
  EXPECT_TRUE(use_measured_links(other, {measured()}, "H100").empty());
}

TEST(MeasuredLinks, TheSimulatorRunsEachCollectiveInTheFitsTime) {
  const calibration::LinkCalibration l = measured();
  for (const auto& [op, algorithm] :
       {std::pair{"all_gather", "ring"}, std::pair{"broadcast", "ring"},
        std::pair{"send_recv", "direct"}, std::pair{"all_to_all", "direct"},
        std::pair{"all_reduce", "ring"}}) {
    Scenario s = two_cpu_sweep(op, algorithm);
    use_measured_links(s, {l}, "CPU");
    const LoweredScenario lowered = lower_with_chosen_costs(s);
    const ScenarioRun run = run_scenario(s, lowered);
    ASSERT_EQ(run.result.collectives.size(), 3u) << op;  // 64 KiB, 1 MiB, 16 MiB
    for (const CollectiveRecord& c : run.result.collectives) {
      const double simulated = (c.end - c.start).seconds();
      const double fit = calibration::predicted_seconds(l.fit, c.op, 2, c.bytes);
      EXPECT_NEAR(simulated / fit, 1.0, 0.02) << op << " " << c.bytes.count() << " bytes";
    }
  }
}

// A cost database for the CPU whose `op` over two ranks took 50 us at 64 KiB, 400 us at
// 1 MiB and 9 ms at 16 MiB, written to a temporary file.
std::string database_measuring(const std::vector<CollectiveOp>& ops) {
  calibration::CostDatabase db;
  db.device.backend = "cpu";
  db.device.name = "test";
  db.device.catalog_name = "CPU";
  db.device.timer = "steady_clock";
  calibration::LinkCalibration l = measured();
  for (CollectiveOp op : ops) {
    calibration::CollectiveMeasurement m;
    m.op = op;
    for (const auto& [bytes, seconds] :
         {std::pair{KiB(64), 5e-5}, std::pair{MiB(1), 4e-4}, std::pair{MiB(16), 9e-3}}) {
      m.points.push_back(calibration::figures::point(bytes, {seconds}));
    }
    l.collectives.push_back(m);
  }
  l.fit = calibration::fit_link(l);
  db.links.push_back(l);
  const std::string path = testing::TempDir() + "/measured_links_db.json";
  std::ofstream(path) << calibration::cost_database_to_json(db).dump();
  return path;
}

TEST(MeasuredLinks, ADatabasesMeasuredCallsAreRunInTheirMeasuredTime) {
  // A run prices exactly the measured calls by their measurements, not by the links.
  const std::string path = database_measuring({CollectiveOp::kAllGather});
  Scenario s = two_cpu_sweep("all_gather", "ring");
  const LoweredScenario lowered = lower_with_chosen_costs(s, CostsChoice{path, std::nullopt});
  ASSERT_TRUE(lowered.collective_costs);
  ASSERT_EQ(lowered.measured_links.size(), 1u);
  const ScenarioRun run = run_scenario(s, lowered);
  ASSERT_EQ(run.result.collectives.size(), 3u);
  const double want[] = {5e-5, 4e-4, 9e-3};
  for (size_t i = 0; i < 3; ++i) {
    const CollectiveRecord& c = run.result.collectives[i];
    EXPECT_NEAR((c.end - c.start).seconds(), want[i], 1e-9) << i;
  }
  EXPECT_EQ(run.result.priced_collectives[static_cast<size_t>(CostSource::kMeasured)], 3);
  EXPECT_EQ(run.result.network_collectives, 0);
  // An op it did not measure is the network model's, over the measured link.
  Scenario other = two_cpu_sweep("broadcast", "ring");
  const LoweredScenario broadcast = lower_with_chosen_costs(other, CostsChoice{path, std::nullopt});
  const ScenarioRun b = run_scenario(other, broadcast);
  EXPECT_EQ(b.result.network_collectives, 3);
  std::filesystem::remove(path);
}

TEST(MeasuredLinks, PipelineSendsLikeTheMeasuredOnesTakeTheirMeasuredTime) {
  // Two pipeline stages on the two CPU ranks: their sends and the tied embedding's
  // all-reduce are all priced by the database.
  const std::string path = database_measuring({CollectiveOp::kSendRecv, CollectiveOp::kAllReduce});
  const std::string example =
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/small-transformer-2xcpu.json";
  Scenario s = load_scenario_file(example, {"parallelism.pp=2"});
  const LoweredScenario lowered = lower_with_chosen_costs(s, CostsChoice{path, std::nullopt});
  const ScenarioRun run = run_scenario(s, lowered);
  int64_t priced = 0;
  for (int64_t n : run.result.priced_collectives) priced += n;
  EXPECT_GE(priced, 4);  // 2 micro-batches: activations forward and gradients back for each
  EXPECT_EQ(run.result.network_collectives, 0);
  Scenario catalog = load_scenario_file(example, {"parallelism.pp=2"});
  const LoweredScenario plain = lower_with_chosen_costs(catalog);
  const ScenarioRun base = run_scenario(catalog, plain);
  EXPECT_EQ(base.result.network_collectives, priced);
  EXPECT_NE(run.result.end, base.result.end);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dtsim
