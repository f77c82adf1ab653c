// CPU kernels whose time could depend on their values: GeLU over activations of a given
// spread (normal, mean 0), forward and backward. A kernel calibrated on one tensor prices
// every other only if these agree across spreads (docs/real-execution.md, "Values").
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>

#include "kernels/kernel.h"

namespace dtsim {
namespace {

// range(0): the values' standard deviation in hundredths; range(1): 0 forward, 1 backward.
void BM_CpuGelu(benchmark::State& state) {
  kernels::set_cpu_threads(1);
  OpSignature op;
  op.name = "gelu";
  op.kind = KernelKind::kGelu;
  op.pass = state.range(1) == 0 ? OpPass::kForward : OpPass::kBackward;
  op.storage = op.math = DType::kFp32;
  op.rows = 512;  // the small GPT's MLP: 4 x 128 tokens by 1,024
  op.width = 1024;
  op.bytes = 2.0 * static_cast<double>(op.rows * op.width) * 4;
  kernels::OperandBuffers buffers(op);
  std::mt19937 random(1);
  std::normal_distribution<float> values(0.0f, static_cast<float>(state.range(0)) / 100);
  float* x = buffers.as<float>(0);
  for (int64_t i = 0; i < op.rows * op.width; ++i) x[i] = values(random);
  for (auto _ : state) kernels::run_cpu(op, buffers);
  state.SetItemsProcessed(state.iterations() * op.rows * op.width);
}
BENCHMARK(BM_CpuGelu)
    ->ArgsProduct({{1, 10, 100, 300}, {0, 1}})
    ->ArgNames({"spread_x100", "backward"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dtsim
