// The trace of a subset of ranks keeps their tasks, their collective calls and their
// nodes' links, and nothing else.
#include "reports/trace_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/loader.h"
#include "runner/scenario_runner.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

// Two nodes of two GPUs, pipeline over the nodes: ranks 0-1 hold stage 0, ranks 2-3 stage 1.
constexpr const char* kScenario = R"({
  "cluster": { "nodes": [ { "count": 2, "device": "A100-80GB", "devices_per_node": 2,
                            "nics": 1, "nic_bandwidth": "100Gbps" } ],
               "fabric": { "kind": "single_switch" } },
  "model": { "family": "gpt", "layers": 2, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 64 },
  "training": { "global_batch": 4, "micro_batch": 1 },
  "parallelism": { "tp": 2, "pp": 2 }
})";

nlohmann::json traced(const test_support::Prepared& p, int ranks) {
  const LoweredScenario& s = p.lowered;
  TraceWriter trace(s, ranks);
  run_scenario(p.scenario, s, {&trace});
  std::ostringstream out;
  trace.write(out, s);
  return nlohmann::json::parse(out.str());
}

TEST(TraceWriter, KeepsOnlyTheTracedRanks) {
  const auto s_prepared = test_support::prepare(nlohmann::json::parse(kScenario), "t.json");
  const auto all = traced(*s_prepared, 4)["traceEvents"];
  const auto two = traced(*s_prepared, 2)["traceEvents"];
  // pids 0-3 are the ranks, 4 the collective calls, 5 the links (trace_writer.cc).
  std::set<int> task_pids;
  int all_links = 0, two_links = 0, all_calls = 0, two_calls = 0;
  for (const auto& e : two) {
    if (e["ph"] != "X") continue;
    const int pid = e["pid"];
    if (pid == 5) ++two_links;
    else if (pid == 4) ++two_calls;
    else task_pids.insert(pid);
  }
  for (const auto& e : all) {
    if (e["ph"] != "X") continue;
    if (e["pid"] == 5) ++all_links;
    if (e["pid"] == 4) ++all_calls;
  }
  EXPECT_EQ(task_pids, (std::set<int>{0, 1}));
  // Stage 1's TP all-reduces involve only ranks 2 and 3: they are left out.
  EXPECT_GT(two_calls, 0);
  EXPECT_LT(two_calls, all_calls);
  // Links inside node 1 (ranks 2 and 3) are left out; node 0's and the path to it stay.
  EXPECT_GT(two_links, 0);
  EXPECT_LT(two_links, all_links);
  for (const auto& e : two) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e.contains("args")) {
      const std::string name = e["args"]["name"];
      EXPECT_EQ(name.find("n1.gpu"), std::string::npos) << name;
    }
  }
}

// Each rank's memory counter follows its alloc and free tasks: it rises with the model
// states first, peaks at the rank's peak_memory, and returns to the model states once the
// activations are freed.
TEST(TraceWriter, MemoryCounterFollowsAllocAndFree) {
  const auto s_prepared = test_support::prepare(nlohmann::json::parse(kScenario), "t.json");
  const LoweredScenario& s = s_prepared->lowered;
  TraceWriter trace(s, 4);
  const ScenarioRun run = run_scenario(s_prepared->scenario, s, {&trace});
  std::ostringstream out;
  trace.write(out, s);
  const auto events = nlohmann::json::parse(out.str())["traceEvents"];
  std::vector<double> rank0;
  for (const auto& e : events) {
    if (e["ph"] == "C" && e["pid"] == 0 && e["name"] == "memory") rank0.push_back(e["args"]["GiB"]);
  }
  ASSERT_GT(rank0.size(), 2u);
  const double peak = *std::max_element(rank0.begin(), rank0.end());
  EXPECT_NEAR(peak * (1 << 30), static_cast<double>(run.result.ranks[0].peak_memory.count()), 1e3);
  EXPECT_GT(rank0.front(), 0);
  EXPECT_LT(rank0.back(), peak);
  for (double v : rank0) EXPECT_GE(v, 0);
}

}  // namespace
}  // namespace dtsim
