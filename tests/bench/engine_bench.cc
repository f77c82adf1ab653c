// Engine throughput: the classic hold model. N events stay pending; each one that runs
// schedules its successor a pseudo-random delay later. Reports events per second.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "sim/engine.h"

namespace dtsim {
namespace {

struct Hold {
  Engine engine;
  std::vector<int64_t> delays;
  size_t next = 0;
  int64_t remaining = 0;

  void fire() {
    if (--remaining <= 0) return;
    const int64_t d = delays[next++ & (delays.size() - 1)];
    engine.schedule_after(Duration::ns(d), [this] { fire(); });
  }
};

void BM_EngineHold(benchmark::State& state) {
  const int64_t pending = state.range(0);
  const int64_t per_iteration = 1'000'000;
  uint64_t x = 88172645463325252ULL;  // xorshift64: a fixed, cheap delay sequence
  std::vector<int64_t> delays(1 << 16);
  for (auto& d : delays) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    d = 1 + static_cast<int64_t>(x % 1'000'000);
  }
  for (auto _ : state) {
    state.PauseTiming();
    Hold h;
    h.delays = delays;
    h.remaining = per_iteration;
    for (int64_t i = 0; i < pending; ++i) {
      h.engine.schedule_at(Time::ns(delays[i & 0xffff]), [&h] { h.fire(); });
    }
    state.ResumeTiming();
    h.engine.run();
    benchmark::DoNotOptimize(h.engine.now());
    state.SetItemsProcessed(state.items_processed() + static_cast<int64_t>(h.engine.events_processed()));
  }
  state.counters["pending"] = static_cast<double>(pending);
}
BENCHMARK(BM_EngineHold)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dtsim
