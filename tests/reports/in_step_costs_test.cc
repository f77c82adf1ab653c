// Feedback from a real run: each op's in-step durations become one in_step entry per
// signature, replacing an earlier in-step entry but not the isolated one; the per-op
// comparison ranks ops by their share of the step's gap.
#include <gtest/gtest.h>

#include "runner/in_step_costs.h"

namespace dtsim {
namespace {

OpSignature gemm(int64_t m, const std::string& name) {
  OpSignature op;
  op.name = name;
  op.kind = KernelKind::kGemm;
  op.storage = op.math = DType::kFp32;
  op.gemm = {m, 64, 64, 1, false, true};
  op.flops = op.gemm.flops();
  return op;
}

// Rank 0 runs [a, b] twice (two tasks sharing the op list) over two steps.
struct Fixture {
  TaskGraph g;
  executor::MeasuredRun run;
  Fixture() {
    const OpListId list = g.add_op_list(std::vector<OpSignature>{gemm(64, "a"), gemm(128, "b")});
    for (int i = 0; i < 2; ++i) {
      Task t;
      t.kind = TaskKind::kCompute;
      t.name = "layer";
      t.stream = g.stream("compute");
      t.ops = list;
      g.add(t);
    }
    executor::MeasuredRank r;
    r.tasks = {0, 1};
    r.steps.push_back({0, {{0, 10}, {10, 20}}, {{1000, 5000}, {3000, 7000}}});
    r.steps.push_back({0, {{0, 10}, {10, 20}}, {{2000, 6000}, {4000, 8000}}});
    run.ranks = {r};
  }
};

TEST(InStepCosts, OneEntryPerSignatureWithASamplePerInstanceAndStep) {
  Fixture f;
  const auto entries = in_step_entries(f.g, f.run, 0, 2);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].op.name, "a");
  EXPECT_EQ(entries[0].context, calibration::MeasurementContext::kInStep);
  EXPECT_EQ(entries[0].samples_s.size(), 4u);
  EXPECT_NEAR(entries[0].stats.median_s, 2.5e-6, 1e-15);  // of 1, 3, 2, 4 us
  // Only the first step.
  const auto first = in_step_entries(f.g, f.run, 0, 1);
  ASSERT_EQ(first[1].samples_s.size(), 2u);
  EXPECT_NEAR(first[1].samples_s[0], 5e-6, 1e-15);
  EXPECT_NEAR(first[1].samples_s[1], 7e-6, 1e-15);
}

TEST(InStepCosts, ANewInStepEntryReplacesTheOldOneAndKeepsTheIsolatedOne) {
  Fixture f;
  calibration::CostDatabase base;
  calibration::CostEntry isolated;
  isolated.op = gemm(64, "a");
  isolated.samples_s = {1e-6};
  base.entries = {isolated};
  const auto once = with_in_step(base, in_step_entries(f.g, f.run, 0, 1));
  EXPECT_EQ(once.entries.size(), 3u);
  const auto twice = with_in_step(once, in_step_entries(f.g, f.run, 0, 2));
  ASSERT_EQ(twice.entries.size(), 3u);
  EXPECT_EQ(twice.entries[0].context, calibration::MeasurementContext::kIsolation);
  EXPECT_EQ(twice.entries[1].samples_s.size(), 4u);
}

TEST(InStepCosts, OpsAreRankedByTheirShareOfTheGap) {
  Fixture f;
  // a priced at its measured median, b at 1 us (measured 6 us): b holds the gap.
  const auto ops = compare_ops(
      f.g, f.run, [](const OpSignature& op, int) { return op.name == "a" ? 2.5e-6 : 1e-6; });
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].op.name, "b");
  EXPECT_EQ(ops[0].instances, 2);
  EXPECT_NEAR(ops[0].measured_s, 6.5e-6, 1e-12);
  EXPECT_NEAR(ops[0].total_gap_s, 2 * (1e-6 - 6.5e-6), 1e-12);
  EXPECT_NEAR(ops[1].total_gap_s, 0, 1e-12);
}

TEST(InStepCosts, RefusesOpTimesThatDoNotMatchTheOpList) {
  Fixture f;
  f.run.ranks[0].steps[0].op_ns[0] = {1000};
  EXPECT_THROW(in_step_entries(f.g, f.run, 0, 2), std::invalid_argument);
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

TEST(InStepCosts, EntriesOfOneSignatureFromSeveralRunsPoolTheirSamples) {
  Fixture f;
  auto one = in_step_entries(f.g, f.run, 0, 1);  // a: 1, 3 us; b: 5, 7 us
  auto two = in_step_entries(f.g, f.run, 1, 2);  // a: 2, 4 us; b: 6, 8 us
  one.insert(one.end(), two.begin(), two.end());
  const auto merged = merge_in_step(one);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].samples_s.size(), 4u);
  EXPECT_NEAR(merged[0].stats.median_s, 2.5e-6, 1e-15);
  EXPECT_NEAR(merged[1].stats.median_s, 6.5e-6, 1e-15);
}

}  // namespace
}  // namespace dtsim
