// Data parallelism over regions of unequal size (the fuzzer's first scenario crash): the
// lowering chose the cross-region algorithm, which needs as many members in every region,
// and the simulation threw std::invalid_argument. Now the automatic choice falls back to
// the flat algorithms, and a named algorithm that does not fit is a PlanError at its key.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/scenario_runner.h"
#include "sim/input_error.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

nlohmann::json two_regions(int east, int west) {
  auto region = [](const char* name, int count) {
    return nlohmann::json{{"name", name},
                          {"nodes",
                           {{{"count", count},
                             {"device", "CPU"},
                             {"devices_per_node", 1},
                             {"nic_bandwidth", "10Gbps"}}}},
                          {"fabric", {{"kind", "single_switch"}}},
                          {"gateway_bandwidth", "10Gbps"}};
  };
  return nlohmann::json{
      {"cluster",
       {{"regions", {region("east", east), region("west", west)}},
        {"wan", {{{"between", {"east", "west"}}, {"bandwidth", "100Mbps"}, {"latency", "20ms"}}}}}},
      {"model",
       {{"preset", "gpt2"}, {"layers", 2}, {"hidden", 128}, {"heads", 4}, {"vocab", 1024}}},
      {"training",
       {{"global_batch", east + west}, {"micro_batch", 1}, {"seq_len", 64}, {"precision", "fp32"}}},
      {"parallelism", nlohmann::json::object()}};
}

std::set<CollectiveAlgorithm> algorithms_of(const TaskGraph& g) {
  std::set<CollectiveAlgorithm> out;
  for (const CollectiveCall& c : g.collectives()) out.insert(c.algorithm);
  return out;
}

TEST(UnevenRegions, DataParallelismOverUnequalRegionsRunsWithAFlatAlgorithm) {
  auto p = test_support::prepare(two_regions(2, 1));
  EXPECT_FALSE(algorithms_of(p->lowered.graph).contains(CollectiveAlgorithm::kCrossRegion));
  const ScenarioRun run = run_scenario(p->scenario, p->lowered);
  EXPECT_TRUE(run.result.stalled.empty());
  EXPECT_FALSE(run.result.collectives.empty());
  // Equal regions keep the cross-region algorithm.
  auto even = test_support::prepare(two_regions(2, 2));
  EXPECT_TRUE(algorithms_of(even->lowered.graph).contains(CollectiveAlgorithm::kCrossRegion));
}

TEST(UnevenRegions, ANamedAlgorithmThatDoesNotFitTheGroupIsAPlanErrorAtItsKey) {
  nlohmann::json doc = two_regions(2, 1);
  doc["parallelism"]["dp_algorithm"] = "cross_region";
  try {
    test_support::prepare(doc);
    FAIL() << "lowered a cross-region all-reduce over 2 + 1 ranks";
  } catch (const InputError& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].pointer, "/parallelism/dp_algorithm");
    EXPECT_NE(e.problems()[0].message.find("cross_region needs the same number of members in "
                                           "every region"),
              std::string::npos)
        << e.problems()[0].message;
  }
}

}  // namespace
}  // namespace dtsim
