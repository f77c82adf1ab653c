// The suite against real runs in rounds: every case calibrated and run once per round, its
// files kept per round, and its row standing on its median round.
#include "runner/real_suite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace dtsim {
namespace {

// Two CPU ranks that compute for a millisecond and all-reduce 64 KiB, four times: a case
// whose calibration measures no kernel, so that a round takes seconds.
nlohmann::json small_case() {
  nlohmann::json collectives = nlohmann::json::array();
  nlohmann::json tasks = nlohmann::json::array();
  std::string previous;
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    collectives.push_back({{"name", "g" + n},
                           {"op", "all_reduce"},
                           {"algorithm", "ring"},
                           {"group", "all"},
                           {"bytes", "64KiB"}});
    nlohmann::json compute = {
        {"id", "k" + n}, {"ranks", "all"}, {"kind", "compute"}, {"duration", "1ms"}};
    if (!previous.empty()) compute["deps"] = {previous};
    tasks.push_back(compute);
    tasks.push_back({{"id", "a" + n},
                     {"ranks", "all"},
                     {"kind", "collective"},
                     {"collective", "g" + n},
                     {"deps", {"k" + n}}});
    previous = "a" + n;
  }
  return {
      {"name", "small"},
      {"cluster",
       {{"nodes",
         {{{"count", 1}, {"device", "CPU"}, {"devices_per_node", 2}, {"nic_bandwidth", "10Gbps"}}}},
        {"fabric", {{"kind", "single_switch"}}}}},
      {"workload", {{"kind", "task_graph"}, {"collectives", collectives}, {"tasks", tasks}}},
      {"simulation", {{"network_model", "flow"}}}};
}

TEST(RealSuite, EachCaseRunsOncePerRoundAndStandsOnItsMedianRound) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("dtsim-suite-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "cases");
  std::ofstream(dir / "cases" / "small.json") << small_case().dump(1);
  RealSuiteOptions o;
  o.folder = dir / "cases";
  o.dtsim = DTSIM_BINARY;
  o.rank_program = DTSIM_RANK;
  o.link_emulator = DTSIM_LINK_EMULATOR;
  o.warmup = 1;
  o.iterations = 2;
  o.rounds = 2;
  o.out = dir / "out";
  std::vector<RealSuiteRow> seen;
  const RealSuiteSummary s = run_real_suite(o, [&](const RealSuiteRow& r) { seen.push_back(r); });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].round, 1);
  EXPECT_EQ(seen[1].round, 2);
  ASSERT_TRUE(seen[0].ran) << seen[0].why_not;
  ASSERT_TRUE(seen[1].ran) << seen[1].why_not;
  EXPECT_EQ(s.rounds, 2);
  ASSERT_EQ(s.rows.size(), 1u);
  const RealSuiteRow& r = s.rows[0];
  ASSERT_TRUE(r.ran) << r.why_not;
  EXPECT_EQ(r.round_errors, (std::vector<double>{seen[0].error, seen[1].error}));
  // Of two rounds, the lower error's, with that round's own figures.
  const RealSuiteRow& lower = seen[0].error <= seen[1].error ? seen[0] : seen[1];
  EXPECT_EQ(r.round, lower.round);
  EXPECT_DOUBLE_EQ(r.error, lower.error);
  EXPECT_DOUBLE_EQ(r.measured_s, lower.measured_s);
  EXPECT_DOUBLE_EQ(r.predicted_s, lower.predicted_s);
  EXPECT_GT(r.other_cases_predicted_s, 0);  // no other case: its own isolated costs
  for (const char* round : {"round-1", "round-2"}) {
    EXPECT_TRUE(std::filesystem::exists(o.out / "small" / round / "costs.json")) << round;
    EXPECT_TRUE(std::filesystem::exists(o.out / "small" / round / "validation.json")) << round;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dtsim
