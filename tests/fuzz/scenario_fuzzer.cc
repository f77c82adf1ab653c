// libFuzzer target: a scenario document through the path of `dtsim run` (strict JSON,
// loader, lowering with the chosen costs, simulation, summary), bounded in devices and
// work so that every input finishes within the fuzzer's timeout.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/summary.h"
#include "runner/scenario_runner.h"
#include "scenarios/json_document.h"
#include "scenarios/loader.h"
#include "tests/fuzz/fuzz_outcome.h"

namespace {

// Larger clusters are valid input but cost the fuzzer seconds per case instead of
// milliseconds (under ASan a 64-GPU training step takes 1 to 3 s): documents that declare
// more ranks than kMaxLoadedRanks are not loaded, clusters of more than kMaxRunRanks are
// loaded but not lowered. The loader's own bound (kMaxRanks) is tested in tests/scenarios.
constexpr int64_t kMaxLoadedRanks = 1024;
constexpr int kMaxRunRanks = 16;
// Lowering and simulation stop (a cancelled result) past this many tasks or this long.
constexpr int64_t kMaxFuzzTasks = 50'000;
constexpr std::chrono::milliseconds kMaxFuzzWork{500};

// The ranks a document declares (count x devices_per_node over its node groups, regions
// included), read leniently: whatever is not a count here is left to the loader to refuse.
int64_t declared_ranks(const nlohmann::json& document) {
  int64_t ranks = 0;
  const auto add_nodes = [&](const nlohmann::json& holder) {
    if (!holder.is_object() || !holder.contains("nodes") || !holder["nodes"].is_array()) return;
    for (const nlohmann::json& group : holder["nodes"]) {
      if (!group.is_object()) continue;
      const auto count = group.find("count");
      const auto per_node = group.find("devices_per_node");
      if (count == group.end() || per_node == group.end() || !count->is_number_integer() ||
          !per_node->is_number_integer())
        continue;
      const double group_ranks = count->get<double>() * per_node->get<double>();
      ranks = group_ranks > 1e12 ? int64_t{1} << 40 : ranks + static_cast<int64_t>(group_ranks);
    }
  };
  if (!document.is_object() || !document.contains("cluster")) return 0;
  const nlohmann::json& cluster = document["cluster"];
  add_nodes(cluster);
  if (cluster.is_object() && cluster.contains("regions") && cluster["regions"].is_array())
    for (const nlohmann::json& region : cluster["regions"]) add_nodes(region);
  return ranks;
}

// A control whose progress callback stops the call once the work passes the bounds.
struct BoundedWork {
  std::stop_source stop;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  dtsim::RunControl control() {
    dtsim::RunControl c;
    c.stop = stop.get_token();
    c.check_every = 1 << 10;
    c.progress = [this](std::string_view, int64_t, int64_t total) {
      if (total > kMaxFuzzTasks || std::chrono::steady_clock::now() - start > kMaxFuzzWork)
        stop.request_stop();
    };
    return c;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  int verdict = 0;
  dtsim::fuzz::expect_clean_outcome([&] {
    std::vector<dtsim::InputProblem> problems;
    std::optional<nlohmann::json> document = dtsim::parse_json_strictly(text, problems);
    if (!document) return;
    if (declared_ranks(*document) > kMaxLoadedRanks) {
      verdict = -1;  // not worth keeping in the corpus
      return;
    }
    // A folder that does not exist: files the input names by relative path are not found.
    dtsim::Scenario scenario =
        dtsim::load_scenario(std::move(*document), "/nonexistent-dtsim-fuzz/scenario.json");
    if (scenario.cluster.num_ranks() > kMaxRunRanks) {
      verdict = -1;  // not worth keeping in the corpus
      return;
    }
    BoundedWork work;
    const dtsim::RunControl control = work.control();
    const dtsim::LoweredScenario lowered = dtsim::lower_with_chosen_costs(scenario, {}, control);
    if (lowered.cancelled || lowered.graph.num_tasks() > static_cast<size_t>(kMaxFuzzTasks)) return;
    const dtsim::ScenarioRun run = dtsim::run_scenario(scenario, lowered, {}, control);
    if (run.result.cancelled) return;
    const auto summary = dtsim::make_summary(lowered, run, {.include_wall_time = false});
    (void)dtsim::format_summary_text(summary);
    (void)summary.dump();
  });
  return verdict;
}
