// Whole-scenario wall time: the bundled ring all-reduce benchmark scenario at 1,024, 4,096
// and 16,384 GPUs, 1 MiB and 1 GiB, with the `flow` model (load, build, simulate).
#include <benchmark/benchmark.h>

#include <string>

#include "scenarios/loader.h"
#include "runner/scenario_runner.h"

namespace dtsim {
namespace {

void BM_RingAllReduceScenario(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const std::string size = state.range(1) == 0 ? "1MiB" : "1GiB";
  const std::vector<std::string> overrides{
      "cluster.nodes.0.count=" + std::to_string(gpus / 8),
      "workload.sizes=[\"" + size + "\"]",
  };
  const std::string path = std::string(DTSIM_SOURCE_DIR) + "/scenarios/bench/ring-allreduce-4096.json";
  double simulated = 0;
  uint64_t events = 0;
  for (auto _ : state) {
    Scenario scenario = load_scenario_file(path, overrides);
    // The run's records view the lowered graph's labels: keep it alive with them.
    const LoweredScenario lowered = lower_with_chosen_costs(scenario);
    const ScenarioRun run = run_scenario(scenario, lowered);
    simulated = run.result.end.seconds();
    events = run.result.events;
    benchmark::DoNotOptimize(simulated);
  }
  state.SetLabel(std::to_string(gpus) + " GPUs, " + size);
  state.counters["simulated_s"] = simulated;
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_RingAllReduceScenario)
    ->ArgsProduct({{1024, 4096, 16384}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace dtsim
