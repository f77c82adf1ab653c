// Batch-size schedules worked by hand: Megatron-LM's ramp-up phases and where they switch,
// the iterations a phase runs when batches overshoot its boundary, the batch sizes that
// are simulated, and the steps between them.
#include "models/batch_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace dtsim::models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BatchSchedule, MegatronRampUpInEqualSampleSteps) {
  std::string problem;
  // 16 to 64 by 16 over 300 samples: three steps of 100 samples at 16, 32 and 48.
  EXPECT_THAT(megatron_rampup(16, 16, 300, 64, problem),
              ElementsAre(BatchPhase{16, 100}, BatchPhase{32, 100}, BatchPhase{48, 100}));
  EXPECT_TRUE(problem.empty());
  // 100 samples over three steps: Megatron switches when floor(consumed / 33.3) grows, at
  // 34, 67 and 100 consumed samples.
  EXPECT_THAT(megatron_rampup(16, 16, 100, 64, problem),
              ElementsAre(BatchPhase{16, 34}, BatchPhase{32, 33}, BatchPhase{48, 33}));
  EXPECT_TRUE(megatron_rampup(64, 16, 100, 64, problem).empty());
  EXPECT_THAT(problem, HasSubstr("start (64) must be below global_batch (64)"));
  EXPECT_TRUE(megatron_rampup(16, 20, 100, 64, problem).empty());
  EXPECT_THAT(problem, HasSubstr("must be a multiple of increment (20)"));
}

TEST(BatchSchedule, APhaseEndsOnTheIterationThatReachesItsBoundary) {
  const std::vector<BatchPhase> phases{{16, 34}, {32, 33}, {48, 33}};
  // 3 x 16 = 48 reaches 34; 48 + 32 = 80 reaches 67; 80 + 48 = 128 reaches 100.
  const auto all = phase_iterations(phases, 1e9);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].iterations, 3);
  EXPECT_EQ(all[1].iterations, 1);
  EXPECT_EQ(all[2].iterations, 1);
  EXPECT_EQ(all[0].samples + all[1].samples + all[2].samples, 128);
  // A run of 60 samples ends in the second phase: 48 + 32 = 80 reaches 60, the third has
  // nothing left.
  const auto short_run = phase_iterations(phases, 60);
  EXPECT_EQ(short_run[0].iterations, 3);
  EXPECT_EQ(short_run[1].iterations, 1);
  EXPECT_EQ(short_run[2].iterations, 0);
}

TEST(BatchSchedule, AtMostThreeBatchSizesAreSimulated) {
  std::vector<BatchPhase> few{{16, 10}, {32, 10}, {16, 10}};
  EXPECT_THAT(simulated_batches(few, kMostSimulatedPhases), ElementsAre(16, 32));
  std::vector<BatchPhase> ramp;
  for (int64_t b = 32; b < 1536; b += 32) ramp.push_back({b, 100});  // 47 sizes
  // The smallest, the middle one (index 23 of 0..46) and the largest.
  EXPECT_THAT(simulated_batches(ramp, kMostSimulatedPhases), ElementsAre(32, 768, 1504));
  const std::vector<int64_t> eight = simulated_batches(ramp, 8);
  ASSERT_EQ(eight.size(), 8u);
  EXPECT_EQ(eight.front(), 32);
  EXPECT_EQ(eight.back(), 1504);
}

TEST(BatchSchedule, StepsBetweenSimulatedBatchesAreLinear) {
  const std::map<int64_t, double> simulated{{16, 4.0}, {64, 13.0}};
  EXPECT_DOUBLE_EQ(interpolated_step(simulated, 16), 4.0);
  EXPECT_DOUBLE_EQ(interpolated_step(simulated, 32), 7.0);
  EXPECT_DOUBLE_EQ(interpolated_step(simulated, 48), 10.0);
  EXPECT_DOUBLE_EQ(interpolated_step(simulated, 64), 13.0);
}

}  // namespace
}  // namespace dtsim::models
