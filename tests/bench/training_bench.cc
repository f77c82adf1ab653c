// One training step of GPT-3 175B (scenarios/examples/gpt3-175b-1024xA100.json, TP 8,
// PP 16 interleaved, `flow` model) on 1,024 and 16,384 GPUs: load + lower time, simulation
// time and peak RSS.
#include <benchmark/benchmark.h>

#include <chrono>
#include <fstream>
#include <stop_token>
#include <string>
#include <vector>

#include "scenarios/loader.h"
#include "runner/scenario_runner.h"

namespace dtsim {
namespace {

// VmHWM of /proc/self/status (peak resident set), in bytes; 0 where unavailable.
double peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024;  // "... kB"
  }
  return 0;
}

// Resets VmHWM to the current RSS (Linux >= 4.0), so that each case reports its own peak
// rather than that of the largest case run before it in this process.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_Gpt3TrainingStep(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const bool layer = state.range(1) == 1;
  std::vector<std::string> overrides{"simulation.trace=false"};
  if (layer) overrides.push_back("simulation.granularity=layer");
  if (gpus != 1024) {
    overrides.push_back("cluster.nodes.0.count=" + std::to_string(gpus / 8));
    // The interleaved schedule needs micro-batches per replica to be a multiple of pp (16):
    // 1,536 over 128 replicas would be 12, so take 16 per replica (2,048 on 16,384 GPUs).
    const int replicas = gpus / (8 * 16);  // tp 8, pp 16
    overrides.push_back("training.global_batch=" + std::to_string(16 * replicas));
  }
  const std::string path =
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/gpt3-175b-1024xA100.json";
  reset_peak_rss();
  double load_s = 0, simulate_s = 0, simulated = 0, op_lists = 0, op_list_mb = 0, tasks = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    Scenario scenario = load_scenario_file(path, overrides);  // parse, build
    const LoweredScenario lowered = lower_with_chosen_costs(scenario);
    load_s = seconds_since(t0);
    op_lists = static_cast<double>(lowered.graph.num_op_lists());
    tasks = static_cast<double>(lowered.graph.num_tasks());
    op_list_mb = static_cast<double>(lowered.graph.op_list_bytes()) / 1e6;
    const auto t1 = std::chrono::steady_clock::now();
    const ScenarioRun run = run_scenario(scenario, lowered);
    simulate_s = seconds_since(t1);
    simulated = run.result.end.seconds();
    benchmark::DoNotOptimize(simulated);
  }
  state.SetLabel(std::to_string(gpus) + " GPUs, granularity " + (layer ? "layer" : "chunk"));
  state.counters["tasks"] = tasks;
  state.counters["load_lower_s"] = load_s;
  state.counters["op_lists"] = op_lists;
  state.counters["op_list_MB"] = op_list_mb;
  state.counters["simulate_s"] = simulate_s;
  state.counters["iteration_s"] = simulated;  // simulated time of the step
  state.counters["peak_rss"] =
      benchmark::Counter(peak_rss_bytes(), benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
}
// One iteration each: a case takes seconds, and the smoke test runs every case once.
// Arguments: GPUs, granularity (0 chunk, 1 layer).
BENCHMARK(BM_Gpt3TrainingStep)
    ->ArgNames({"gpus", "layer"})
    ->Args({1024, 0})
    ->Args({16384, 0})
    ->Args({1024, 1})
    ->Args({16384, 1})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

// Cancel latency: the 1,024-GPU step is stopped halfway through its simulation (by tasks
// finished, as a GUI's stop button would, from the progress callback) and the time from the
// request until run_scenario returns is measured; the same for a stop halfway through the
// lowering.
void BM_Gpt3CancelLatency(benchmark::State& state) {
  const bool in_lowering = state.range(0) == 1;
  const std::string path =
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/gpt3-175b-1024xA100.json";
  double latency_s = 0;
  bool cancelled = false;
  for (auto _ : state) {
    Scenario scenario = load_scenario_file(path, {"simulation.trace=false"});
    std::stop_source stop;
    std::chrono::steady_clock::time_point requested;
    RunControl control;
    control.stop = stop.get_token();
    control.progress = [&](std::string_view phase, int64_t done, int64_t total) {
      if ((phase == "lowering") == in_lowering && 2 * done >= total && !stop.stop_requested()) {
        requested = std::chrono::steady_clock::now();
        stop.request_stop();
      }
    };
    const LoweredScenario lowered = lower_with_chosen_costs(scenario, {}, control);
    if (in_lowering) {
      latency_s = seconds_since(requested);
      cancelled = lowered.cancelled;
    } else {
      const ScenarioRun run = run_scenario(scenario, lowered, {}, control);
      latency_s = seconds_since(requested);
      cancelled = run.result.cancelled;
    }
  }
  state.SetLabel(in_lowering ? "stop while lowering" : "stop while simulating");
  state.counters["cancel_latency_s"] = latency_s;
  state.counters["cancelled"] = cancelled ? 1 : 0;
}
BENCHMARK(BM_Gpt3CancelLatency)
    ->Arg(0)
    ->Arg(1)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace dtsim
