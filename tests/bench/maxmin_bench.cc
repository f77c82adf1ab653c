// Benchmarks of MaxMinSolver: incremental one-flow updates and full-component solves.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "sim/maxmin_solver.h"

namespace dtsim {
namespace {

using ConstraintId = MaxMinSolver::ConstraintId;
using VarId = MaxMinSolver::VarId;

// Flows stay inside clusters of this many constraints (a pod of a fat tree), so the
// instance splits into many components of ~2 * kClusterSize flows each.
constexpr uint32_t kClusterSize = 16;

std::array<ConstraintId, 4> clustered_flow(std::mt19937_64& rng, uint32_t num_clusters) {
  const uint32_t base =
      std::uniform_int_distribution<uint32_t>(0, num_clusters - 1)(rng) * kClusterSize;
  std::uniform_int_distribution<uint32_t> member(0, kClusterSize - 1);
  std::array<ConstraintId, 4> cons{};
  for (size_t i = 0; i < cons.size(); ++i) {
    // Distinct members: a repeat would only shrink the flow's path.
    bool repeat = true;
    while (repeat) {
      cons[i] = base + member(rng);
      repeat = false;
      for (size_t j = 0; j < i; ++j) repeat = repeat || cons[j] == cons[i];
    }
  }
  return cons;
}

// N flows on N/2 constraints; each iteration removes a random flow, adds a new one and
// solves, so items/s reads as updates per second.
void BM_MaxMinIncrementalUpdate(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const uint32_t num_clusters = std::max<uint32_t>(1, n / 2 / kClusterSize);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> cap(10.0, 40.0);
  MaxMinSolver solver;
  for (uint32_t c = 0; c < num_clusters * kClusterSize; ++c) solver.add_constraint(cap(rng));
  std::vector<VarId> flows;
  for (uint32_t i = 0; i < n; ++i) solver.add_variable(clustered_flow(rng, num_clusters));
  for (VarId v = 0; v < n; ++v) flows.push_back(v);
  solver.solve();

  std::vector<VarId> changed;
  for (auto _ : state) {
    const size_t victim = std::uniform_int_distribution<size_t>(0, flows.size() - 1)(rng);
    solver.remove_variable(flows[victim]);
    flows[victim] = solver.add_variable(clustered_flow(rng, num_clusters));
    changed.clear();
    solver.solve(&changed);
    benchmark::DoNotOptimize(changed.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["flows"] = static_cast<double>(solver.num_variables());
}
BENCHMARK(BM_MaxMinIncrementalUpdate)->Arg(1024)->Arg(4096)->Arg(16384);

// One ring-shaped component: flow i uses links i and (i + 1) % N. Toggling one capacity
// dirties the whole ring, so every iteration re-solves all N flows from scratch; items/s
// counts flows solved per second.
void BM_MaxMinFullSolve(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  MaxMinSolver solver;
  for (uint32_t i = 0; i < n; ++i) solver.add_constraint(100.0);
  for (uint32_t i = 0; i < n; ++i) {
    const std::array<ConstraintId, 2> cons{i, (i + 1) % n};
    solver.add_variable(cons);
  }
  solver.solve();

  std::vector<VarId> changed;
  bool low = false;
  for (auto _ : state) {
    low = !low;
    solver.set_capacity(0, low ? 50.0 : 100.0);
    changed.clear();
    solver.solve(&changed);
    benchmark::DoNotOptimize(changed.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n);
}
BENCHMARK(BM_MaxMinFullSolve)->Arg(1024)->Arg(4096)->Arg(16384);

}  // namespace
}  // namespace dtsim
