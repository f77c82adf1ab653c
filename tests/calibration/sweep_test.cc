// Measurement discipline (statistics, repeating until the spread is small) and the sweep
// (distinct kernels, GEMM neighbours, refusals, budget and stop).
#include <gtest/gtest.h>

#include <stop_token>

#include "calibration/calibrate.h"
#include "calibration/cost_key.h"
#include "calibration/measure.h"

namespace dtsim::calibration {
namespace {

TEST(SampleStats, PercentilesInterpolateBetweenOrderStatistics) {
  const SampleStats s = stats_of({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median_s, 3);
  EXPECT_DOUBLE_EQ(s.p20_s, 1.8);  // numpy.percentile([1..5], 20)
  EXPECT_DOUBLE_EQ(s.p80_s, 4.2);
  EXPECT_DOUBLE_EQ(s.mean_s, 3);
  EXPECT_NEAR(s.cv, std::sqrt(2.5) / 3, 1e-12);
  EXPECT_EQ(stats_of({}).count, 0);
}

// A timer whose samples are given: spread first, then steady.
class ScriptedTimer final : public KernelTimer {
 public:
  explicit ScriptedTimer(std::vector<double> samples) : samples_(std::move(samples)) {}
  std::string name() const override { return "scripted"; }
  std::vector<double> time(const std::function<void()>& kernel,
                           const std::function<void()>& between, int repeats) override {
    std::vector<double> out;
    for (int i = 0; i < repeats; ++i) {
      between();
      kernel();
      out.push_back(samples_[next_++ % samples_.size()]);
    }
    return out;
  }

 private:
  std::vector<double> samples_;
  size_t next_ = 0;
};

TEST(Measure, RepeatsUntilTheSpreadIsSmallAndFlushesBeforeEachRun) {
  MeasurementPolicy policy;
  policy.warmup = 2;
  policy.round = 5;
  policy.max_repeats = 40;
  policy.target_cv = 0.05;
  // Two warm-up runs, a first round spread out, then steady rounds.
  std::vector<double> script = {9, 9, 1, 3, 1, 3, 1};
  for (int i = 0; i < 100; ++i) script.push_back(2);
  ScriptedTimer timer(script);
  int runs = 0;
  const Measurement m = measure([&] { ++runs; }, timer, [] {}, policy);
  // The spread first round is measured again; the steady second one ends it, and every
  // sample is kept.
  EXPECT_FALSE(m.noisy);
  ASSERT_EQ(m.samples_s.size(), 10u);
  EXPECT_EQ(runs, 12);
  EXPECT_DOUBLE_EQ(m.stats.median_s, 2);
  EXPECT_GT(m.stats.cv, 0.05);
  // Never steady: stops at the cap and says so.
  ScriptedTimer noisy({1, 3});
  const Measurement n = measure([] {}, noisy, [] {}, policy);
  EXPECT_TRUE(n.noisy);
  EXPECT_EQ(n.samples_s.size(), 40u);
}

OpSignature norm(const std::string& name, int64_t rows) {
  OpSignature op;
  op.name = name;
  op.kind = KernelKind::kLayerNorm;
  op.storage = op.math = DType::kFp32;
  op.rows = rows;
  op.width = 64;
  op.bytes = 8.0 * static_cast<double>(rows) * 64;
  return op;
}

TEST(Sweep, MeasuresEachDistinctKernelOnceAndRefusesWithReasons) {
  TaskGraph g;
  const std::vector<OpSignature> a = {norm("attn.norm", 32), norm("mlp.norm", 32)};
  const std::vector<OpSignature> b = {norm("attn.norm", 64)};
  g.add_op_list(a);
  g.add_op_list(b);
  const auto kernels = distinct_kernels(g);
  ASSERT_EQ(kernels.size(), 2u);  // the two 32-row norms are one kernel
  OpSignature conv = norm("conv1", 1);
  conv.kind = KernelKind::kConv;
  std::vector<OpSignature> ops = kernels;
  ops.push_back(conv);
  SweepOptions options;
  options.policy.max_repeats = 5;
  const SweepResult r = sweep_cpu(ops, cpu_identity("CPU"), options);
  EXPECT_EQ(r.db.entries.size(), 2u);
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_NE(r.refused[0].find("conv (forward, \"conv1\")"), std::string::npos);
  for (const CostEntry& e : r.db.entries) {
    EXPECT_GT(e.stats.median_s, 0);
    EXPECT_EQ(e.context, MeasurementContext::kIsolation);
  }
  EXPECT_EQ(r.db.device.backend, "cpu");
  EXPECT_GT(r.db.device.cores, 0);
  EXPECT_NE(r.db.device.blas.find("OpenBLAS"), std::string::npos);
}

TEST(Sweep, StopsAtItsBudgetOrWhenAsked) {
  const std::vector<OpSignature> ops = {norm("a", 32), norm("b", 64), norm("c", 128)};
  SweepOptions tight;
  tight.budget = Duration::ns(1);
  const SweepResult over = sweep_cpu(ops, cpu_identity("CPU"), tight);
  EXPECT_FALSE(over.cancelled);
  EXPECT_EQ(over.unmeasured + static_cast<int>(over.db.entries.size()), 3);
  EXPECT_GE(over.unmeasured, 2);
  std::stop_source stop;
  stop.request_stop();
  SweepOptions stopped;
  stopped.control.stop = stop.get_token();
  const SweepResult r = sweep_cpu(ops, cpu_identity("CPU"), stopped);
  EXPECT_TRUE(r.cancelled);
  EXPECT_TRUE(r.db.entries.empty());
}

TEST(Sweep, GemmGridsCarryTheirPlusOneNeighbours) {
  OpSignature g;
  g.kind = KernelKind::kGemm;
  g.storage = g.math = DType::kFp32;
  g.gemm = {64, 64, 64, 1, false, true};
  g.flops = g.gemm.flops();
  const auto grid = with_gemm_neighbours({g, norm("n", 8)});
  ASSERT_EQ(grid.size(), 5u);
  EXPECT_EQ(grid[1].gemm.m, 65);
  EXPECT_EQ(grid[2].gemm.n, 65);
  EXPECT_EQ(grid[3].gemm.k, 65);
  EXPECT_DOUBLE_EQ(grid[2].flops, 2.0 * 64 * 65 * 64);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(family_key(grid[i]), family_key(g));
}

}  // namespace
}  // namespace dtsim::calibration
