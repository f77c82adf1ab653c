// compare_step: the measured step is first start to last end over the ranks, per step;
// medians and percentiles over the steps; kinds and ranks summed as documented; and a run
// that does not match its graph is refused.
#include <gtest/gtest.h>

#include "executor/step_comparison.h"
#include "tests/executor/graph_builder.h"

namespace dtsim::executor {
namespace {

using testing::add_compute;
using testing::add_task;

constexpr int64_t kMs = 1'000'000;

// Rank 0: compute (local 0), then a collective (local 1); rank 1: compute (task 2).
struct Fixture {
  TaskGraph g;
  MeasuredRun run;
  std::vector<PredictedTask> predicted;
  Fixture() {
    add_compute(g, 0, "compute", "fwd");
    add_task(g, TaskKind::kCollective, 0, "dp", "reduce", {0});
    add_compute(g, 1, "compute", "fwd");
    MeasuredRank r0;
    r0.rank = 0;
    r0.tasks = {0, 1};
    MeasuredRank r1;
    r1.rank = 1;
    r1.tasks = {2};
    // Three steps of 10, 12 and 20 ms, starting at 100, 200 and 300 ms; rank 1 starts
    // 1 ms later than rank 0 and ends first.
    const int64_t starts[] = {100 * kMs, 200 * kMs, 300 * kMs};
    const int64_t lengths[] = {10 * kMs, 12 * kMs, 20 * kMs};
    for (int s = 0; s < 3; ++s) {
      const int64_t t0 = starts[s];
      const int64_t len = lengths[s];
      r0.steps.push_back({t0, {{t0, t0 + len / 2}, {t0 + len / 2, t0 + len}}, {{}, {}}});
      r1.steps.push_back({t0 + kMs, {{t0 + kMs, t0 + len / 2}}, {{}}});
    }
    run.ranks = {r0, r1};
    predicted = {{0, 0.006, true}, {0.006, 0.011, true}, {0, 0.005, true}};
  }
};

TEST(StepComparison, StepTimesMediansAndTheSignedError) {
  Fixture f;
  const StepComparison c = compare_step(f.g, f.run, f.predicted, 0.011);
  EXPECT_EQ(c.steps, 3);
  ASSERT_EQ(c.measured_steps_s.size(), 3u);
  EXPECT_DOUBLE_EQ(c.measured_steps_s[0], 0.010);
  EXPECT_DOUBLE_EQ(c.measured_steps_s[2], 0.020);
  EXPECT_DOUBLE_EQ(c.step.measured_s, 0.012);
  EXPECT_NEAR(c.step.measured_p10_s, 0.0104, 1e-12);  // between 10 and 12 ms, a fifth of the way
  EXPECT_NEAR(c.step.measured_p90_s, 0.0184, 1e-12);
  EXPECT_NEAR(c.step.error, (0.011 - 0.012) / 0.012, 1e-12);
}

TEST(StepComparison, KindsSumEveryRanksTasksAndRanksKeepTheirOwn) {
  Fixture f;
  const StepComparison c = compare_step(f.g, f.run, f.predicted, 0.011);
  ASSERT_EQ(c.kinds.size(), 2u);
  EXPECT_EQ(c.kinds[0].kind, TaskKind::kCompute);
  EXPECT_EQ(c.kinds[0].tasks, 2);
  // Median step (12 ms): rank 0's compute 6 ms + rank 1's 5 ms.
  EXPECT_NEAR(c.kinds[0].busy.measured_s, 0.011, 1e-12);
  EXPECT_NEAR(c.kinds[0].busy.predicted_s, 0.011, 1e-12);
  EXPECT_EQ(c.kinds[1].kind, TaskKind::kCollective);
  EXPECT_NEAR(c.kinds[1].busy.predicted_s, 0.005, 1e-12);
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_NEAR(c.ranks[0].finish.measured_s, 0.012, 1e-12);
  EXPECT_NEAR(c.ranks[1].finish.measured_s, 0.006, 1e-12);  // measured from the step's start
  EXPECT_NEAR(c.ranks[1].finish.predicted_s, 0.005, 1e-12);
  EXPECT_NEAR(c.ranks[1].compute_busy.measured_s, 0.005, 1e-12);
  ASSERT_EQ(c.tasks.size(), 3u);
  EXPECT_NEAR(c.tasks[2].measured_start_s, 0.001, 1e-12);
  EXPECT_NEAR(c.tasks[1].predicted_s, 0.005, 1e-12);
}

TEST(StepComparison, RefusesARunThatDoesNotMatchItsGraph) {
  Fixture f;
  MeasuredRun wrong_task = f.run;
  wrong_task.ranks[1].tasks = {1};  // task 1 is rank 0's
  EXPECT_THROW(compare_step(f.g, wrong_task, f.predicted, 0.011), std::invalid_argument);
  MeasuredRun fewer_steps = f.run;
  fewer_steps.ranks[1].steps.pop_back();
  EXPECT_THROW(compare_step(f.g, fewer_steps, f.predicted, 0.011), std::invalid_argument);
  EXPECT_THROW(compare_step(f.g, f.run, {}, 0.011), std::invalid_argument);
  MeasuredRun none = f.run;
  for (MeasuredRank& r : none.ranks) r.steps.clear();
  EXPECT_THROW(compare_step(f.g, none, f.predicted, 0.011), std::invalid_argument);
}

TEST(StepComparison, Quantiles) {
  EXPECT_DOUBLE_EQ(quantile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({5}, 0.9), 5);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0);
}

}  // namespace
}  // namespace dtsim::executor
