// Tests of the pipeline schedules: hand-written orders, Megatron-LM's interleaving, bubble
// fractions from the replayed makespan, in-flight micro-batches, and rejected inputs.
#include "models/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace dtsim::models {
namespace {

using S = PipelineSchedule;

PipeStep F(int mb, int chunk = 0) { return {true, mb, chunk}; }
PipeStep B(int mb, int chunk = 0) { return {false, mb, chunk}; }

std::string to_string(const std::vector<PipeStep>& order) {
  std::string out;
  for (const PipeStep& s : order) {
    out += (s.forward ? "F" : "B") + std::to_string(s.micro_batch) + "." + std::to_string(s.chunk) +
           " ";
  }
  return out;
}

// Megatron-LM's warm-up of the interleaved schedule, written out independently.
int megatron_warmup(int stage, int p, int m, int v) {
  if (m == p) return m * v;
  return std::min((p - stage - 1) * 2 + (v - 1) * p, m * v);
}

// (p, m, v) combinations valid for the interleaved schedule.
std::vector<std::tuple<int, int, int>> interleaved_cases() {
  std::vector<std::tuple<int, int, int>> cases;
  for (int p : {1, 2, 3, 4, 8}) {
    for (int v : {2, 3, 4}) {
      for (int groups : {1, 2, 3, 4}) cases.emplace_back(p, p * groups, v);
    }
  }
  return cases;
}

TEST(ScheduleNames, RoundTripAndDescribe) {
  for (S s : kAllSchedules) {
    EXPECT_EQ(schedule_from_name(schedule_name(s)), s);
    EXPECT_FALSE(schedule_description(s).empty());
  }
  EXPECT_EQ(schedule_name(S::kGpipe), "gpipe");
  EXPECT_EQ(schedule_name(S::k1F1B), "1f1b");
  EXPECT_EQ(schedule_name(S::kInterleaved1F1B), "interleaved_1f1b");
  EXPECT_EQ(schedule_from_name("pipedream"), std::nullopt);
  EXPECT_NE(schedule_description(S::kGpipe).find("Huang"), std::string_view::npos);
  EXPECT_NE(schedule_description(S::k1F1B).find("Narayanan"), std::string_view::npos);
  EXPECT_NE(schedule_description(S::kInterleaved1F1B).find("SC'21"), std::string_view::npos);
}

TEST(ScheduleOrder, GpipeRunsAllForwardsThenBackwardsInReverse) {
  const std::vector<PipeStep> want = {F(0), F(1), F(2), F(3), B(3), B(2), B(1), B(0)};
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(pipeline_order(S::kGpipe, stage, 4, 4), want) << stage;
  }
}

TEST(ScheduleOrder, OneFOneBFirstStageWarmsUpWithThreeForwards) {
  // p = 4, m = 8, stage 0: warm-up min(4 - 0 - 1, 8) = 3 forwards, then 5 pairs
  // F(3 + i) B(i), then the cool-down backwards 5, 6, 7.
  const std::vector<PipeStep> want = {F(0), F(1), F(2), F(3), B(0), F(4), B(1), F(5),
                                      B(2), F(6), B(3), F(7), B(4), B(5), B(6), B(7)};
  EXPECT_EQ(pipeline_order(S::k1F1B, 0, 4, 8), want)
      << to_string(pipeline_order(S::k1F1B, 0, 4, 8));
}

TEST(ScheduleOrder, OneFOneBLastStageAlternatesFromTheStart) {
  // p = 4, m = 8, stage 3: no warm-up, eight pairs F(i) B(i).
  std::vector<PipeStep> want;
  for (int i = 0; i < 8; ++i) {
    want.push_back(F(i));
    want.push_back(B(i));
  }
  EXPECT_EQ(pipeline_order(S::k1F1B, 3, 4, 8), want);
}

TEST(ScheduleOrder, OneFOneBWithFewerMicroBatchesThanStagesCapsTheWarmUp) {
  // p = 4, m = 2, stage 0: warm-up min(3, 2) = 2, no steady state, cool-down 0, 1.
  EXPECT_EQ(pipeline_order(S::k1F1B, 0, 4, 2), (std::vector<PipeStep>{F(0), F(1), B(0), B(1)}));
}

TEST(ScheduleOrder, InterleavedMatchesMegatronForTwoStagesTwoChunks) {
  // p = 2, v = 2, m = 4: 8 virtual micro-batches in groups of p * v = 4.
  // Forward virtual k runs chunk (k mod 4) / 2 on micro-batch (k / 4) * 2 + k mod 2:
  //   k:  0    1    2    3    4    5    6    7
  //   F: 0.0  1.0  0.1  1.1  2.0  3.0  2.1  3.1   (micro-batch.chunk)
  // Backward virtual k runs chunk v - 1 - (k mod 4) / 2:
  //   B: 0.1  1.1  0.0  1.0  2.1  3.1  2.0  3.0
  // Stage 0: warm-up (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 forwards (k 0..3), then 4 pairs
  // F(k = 4 + i) B(k = i), then the cool-down backwards k = 4..7.
  const std::vector<PipeStep> stage0 = {F(0, 0), F(1, 0), F(0, 1), F(1, 1), F(2, 0), B(0, 1),
                                        F(3, 0), B(1, 1), F(2, 1), B(0, 0), F(3, 1), B(1, 0),
                                        B(2, 1), B(3, 1), B(2, 0), B(3, 0)};
  // Stage 1: warm-up (2 - 1 - 1) * 2 + 2 = 2 forwards, then 6 pairs F(k = 2 + i) B(k = i),
  // then the cool-down backwards k = 6, 7.
  const std::vector<PipeStep> stage1 = {F(0, 0), F(1, 0), F(0, 1), B(0, 1), F(1, 1), B(1, 1),
                                        F(2, 0), B(0, 0), F(3, 0), B(1, 0), F(2, 1), B(2, 1),
                                        F(3, 1), B(3, 1), B(2, 0), B(3, 0)};
  EXPECT_EQ(pipeline_order(S::kInterleaved1F1B, 0, 2, 4, 2), stage0)
      << to_string(pipeline_order(S::kInterleaved1F1B, 0, 2, 4, 2));
  EXPECT_EQ(pipeline_order(S::kInterleaved1F1B, 1, 2, 4, 2), stage1)
      << to_string(pipeline_order(S::kInterleaved1F1B, 1, 2, 4, 2));
}

TEST(ScheduleOrder, InterleavedWithAsManyMicroBatchesAsStagesRunsAllForwardsFirst) {
  // Megatron-LM special-cases m == p: every stage warms up with all m * v forwards.
  // p = 2, v = 2, m = 2: F 0.0 1.0 0.1 1.1, then B 0.1 1.1 0.0 1.0.
  const std::vector<PipeStep> want = {F(0, 0), F(1, 0), F(0, 1), F(1, 1),
                                      B(0, 1), B(1, 1), B(0, 0), B(1, 0)};
  EXPECT_EQ(pipeline_order(S::kInterleaved1F1B, 0, 2, 2, 2), want);
  EXPECT_EQ(pipeline_order(S::kInterleaved1F1B, 1, 2, 2, 2), want);
}

TEST(ScheduleOrder, InterleavedWithOneChunkIsOneFOneB) {
  for (int stage = 0; stage < 4; ++stage) {
    for (int m : {1, 3, 4, 8}) {
      EXPECT_EQ(pipeline_order(S::kInterleaved1F1B, stage, 4, m, 1),
                pipeline_order(S::k1F1B, stage, 4, m));
    }
  }
}

// Every (micro-batch, chunk) once forward and once backward, its forward first.
void expect_complete(S schedule, int stage, int p, int m, int v) {
  SCOPED_TRACE(std::string(schedule_name(schedule)) + " stage " + std::to_string(stage) + " p " +
               std::to_string(p) + " m " + std::to_string(m) + " v " + std::to_string(v));
  const std::vector<PipeStep> order = pipeline_order(schedule, stage, p, m, v);
  ASSERT_EQ(order.size(), static_cast<size_t>(2 * m * v));
  std::set<std::pair<int, int>> forwards;
  std::set<std::pair<int, int>> backwards;
  for (const PipeStep& s : order) {
    ASSERT_GE(s.micro_batch, 0);
    ASSERT_LT(s.micro_batch, m);
    ASSERT_GE(s.chunk, 0);
    ASSERT_LT(s.chunk, v);
    const std::pair<int, int> key{s.micro_batch, s.chunk};
    if (s.forward) {
      EXPECT_TRUE(forwards.insert(key).second);
    } else {
      EXPECT_TRUE(forwards.contains(key));
      EXPECT_TRUE(backwards.insert(key).second);
    }
  }
  EXPECT_EQ(forwards.size(), static_cast<size_t>(m * v));
  EXPECT_EQ(backwards.size(), static_cast<size_t>(m * v));
}

TEST(ScheduleOrder, EveryChunkOfEveryMicroBatchRunsOnceEachWay) {
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 3, 5, 8, 16}) {
      for (int stage = 0; stage < p; ++stage) {
        expect_complete(S::kGpipe, stage, p, m, 1);
        expect_complete(S::k1F1B, stage, p, m, 1);
      }
    }
  }
  for (const auto& [p, m, v] : interleaved_cases()) {
    for (int stage = 0; stage < p; ++stage) expect_complete(S::kInterleaved1F1B, stage, p, m, v);
  }
}

// Bubble fraction of the replay: the makespan beyond the ideal m * v * (fwd + bwd) of one
// stage, over that ideal. With equal-time chunks the schedules reach the ideal exactly.
double replayed_bubble(S schedule, int p, int m, int v, double fwd, double bwd) {
  const double ideal = m * v * (fwd + bwd);
  return (schedule_makespan(schedule, p, m, v, fwd, bwd) - ideal) / ideal;
}

TEST(ScheduleMakespan, HandWorkedSmallPipelines) {
  // One stage: no bubble, 3 micro-batches of 1 + 2.
  EXPECT_DOUBLE_EQ(schedule_makespan(S::k1F1B, 1, 3, 1, 1, 2), 9);
  // GPipe p = 2, m = 1: F on stage 0 [0, 1], stage 1 [1, 2]; B stage 1 [2, 4], stage 0
  // [4, 6].
  EXPECT_DOUBLE_EQ(schedule_makespan(S::kGpipe, 2, 1, 1, 1, 2), 6);
  // 1F1B p = 4, m = 8: (m + p - 1) * (fwd + bwd) = 11 * 3.
  EXPECT_DOUBLE_EQ(schedule_makespan(S::k1F1B, 4, 8, 1, 1, 2), 33);
}

// Stages of their own times: the slow last stage (3 + 6 per micro-batch) runs without a
// pause from the first forward on stage 0 (1) to its fourth backward (1 + 4 x 9), and
// stage 0's last backward (2) follows: 39. Equal times give the uniform replay's answer.
TEST(ScheduleMakespan, UnevenStages) {
  EXPECT_DOUBLE_EQ(schedule_makespan(S::k1F1B, 2, 4, 1, {1, 3}, {2, 6}), 39);
  EXPECT_DOUBLE_EQ(
      schedule_makespan(S::k1F1B, 4, 8, 1, std::vector<double>(4, 1), std::vector<double>(4, 2)),
      33);
  // Interleaved, p = 2, v = 2: virtual stages 1 and 3 (chunks 0 and 1 of stage 1) take
  // 100 each way, 0 and 2 (stage 0's) take 1. Stage 1 alone works 2 micro-batches x 2
  // chunks x 200 = 800, and stage 0 adds a little before and after; had the times been
  // read by another index, the slow chunks would be split over both stages and the step
  // would take about half.
  const double slow =
      schedule_makespan(S::kInterleaved1F1B, 2, 2, 2, {1, 100, 1, 100}, {1, 100, 1, 100});
  EXPECT_GE(slow, 801);
  EXPECT_LT(slow, 810);
  EXPECT_THROW(schedule_makespan(S::k1F1B, 2, 4, 1, {1}, {2, 6}), std::invalid_argument);
  EXPECT_THROW(schedule_makespan(S::k1F1B, 2, 4, 1, {1, -3}, {2, 6}), std::invalid_argument);
}

TEST(ScheduleMakespan, GpipeAndOneFOneBBubbleIsStagesMinusOneOverMicroBatches) {
  for (S schedule : {S::kGpipe, S::k1F1B}) {
    for (int p : {1, 2, 3, 4, 8}) {
      for (int m : {1, 2, 3, 4, 8, 16, 32}) {
        const double want = static_cast<double>(p - 1) / m;
        EXPECT_DOUBLE_EQ(ideal_bubble_fraction(schedule, p, m), want);
        EXPECT_NEAR(replayed_bubble(schedule, p, m, 1, 1, 2), want, 1e-12)
            << schedule_name(schedule) << " p " << p << " m " << m;
      }
    }
  }
}

TEST(ScheduleMakespan, InterleavedBubbleIsDividedByChunks) {
  for (const auto& [p, m, v] : interleaved_cases()) {
    const double want = static_cast<double>(p - 1) / (m * v);
    EXPECT_DOUBLE_EQ(ideal_bubble_fraction(S::kInterleaved1F1B, p, m, v), want);
    for (double bwd : {1.0, 2.0}) {
      EXPECT_NEAR(replayed_bubble(S::kInterleaved1F1B, p, m, v, 1, bwd), want, 1e-12)
          << "p " << p << " m " << m << " v " << v << " bwd " << bwd;
    }
  }
}

TEST(ScheduleMakespan, InterleavingShortensThePipeline) {
  // p = 4, m = 8 with the same model: v = 2 chunks take half the per-chunk time.
  const double plain = schedule_makespan(S::k1F1B, 4, 8, 1, 2, 4);
  const double interleaved = schedule_makespan(S::kInterleaved1F1B, 4, 8, 2, 1, 2);
  EXPECT_DOUBLE_EQ(plain, (8 + 3) * 6);
  EXPECT_DOUBLE_EQ(interleaved, 8 * 6 + 3 * 6 / 2.0);
}

TEST(ScheduleInFlight, GpipeHoldsEveryMicroBatch) {
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(peak_in_flight_chunks(S::kGpipe, stage, 4, 8), 8);
  }
}

TEST(ScheduleInFlight, OneFOneBHoldsStagesMinusStageCappedByMicroBatches) {
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 2, 4, 8, 16}) {
      for (int stage = 0; stage < p; ++stage) {
        EXPECT_EQ(peak_in_flight_chunks(S::k1F1B, stage, p, m), std::min(p - stage, m))
            << "p " << p << " m " << m << " stage " << stage;
      }
    }
  }
}

TEST(ScheduleInFlight, InterleavedHoldsItsWarmUpPlusOne) {
  // p = 4, v = 2, m = 8: stage 0 warms up with 6 + 4 = 10 chunks and holds 11.
  EXPECT_EQ(peak_in_flight_chunks(S::kInterleaved1F1B, 0, 4, 8, 2), 11);
  EXPECT_EQ(peak_in_flight_chunks(S::kInterleaved1F1B, 3, 4, 8, 2), 5);
  for (const auto& [p, m, v] : interleaved_cases()) {
    for (int stage = 0; stage < p; ++stage) {
      EXPECT_EQ(peak_in_flight_chunks(S::kInterleaved1F1B, stage, p, m, v),
                std::min(megatron_warmup(stage, p, m, v) + 1, m * v))
          << "p " << p << " m " << m << " v " << v << " stage " << stage;
    }
  }
}

TEST(ScheduleErrors, RejectsImpossibleCombinations) {
  EXPECT_THROW(pipeline_order(S::k1F1B, 0, 0, 4), std::invalid_argument);
  EXPECT_THROW(pipeline_order(S::k1F1B, 0, 4, 0), std::invalid_argument);
  EXPECT_THROW(pipeline_order(S::k1F1B, 4, 4, 8), std::invalid_argument);
  EXPECT_THROW(pipeline_order(S::k1F1B, -1, 4, 8), std::invalid_argument);
  EXPECT_THROW(pipeline_order(S::kInterleaved1F1B, 0, 4, 8, 0), std::invalid_argument);
  EXPECT_THROW(pipeline_order(S::kGpipe, 0, 4, 8, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_order(S::k1F1B, 0, 4, 8, 2), std::invalid_argument);
  EXPECT_THROW(ideal_bubble_fraction(S::k1F1B, 4, 8, 2), std::invalid_argument);
  EXPECT_THROW(peak_in_flight_chunks(S::kGpipe, 0, 4, 8, 2), std::invalid_argument);
  EXPECT_THROW(schedule_makespan(S::k1F1B, 4, 8, 1, -1, 2), std::invalid_argument);
}

TEST(ScheduleErrors, InterleavedNeedsMicroBatchesDivisibleByStages) {
  try {
    pipeline_order(S::kInterleaved1F1B, 0, 4, 6, 2);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("divisible"), std::string::npos) << what;
    EXPECT_NE(what.find("6"), std::string::npos) << what;
  }
  EXPECT_THROW(schedule_makespan(S::kInterleaved1F1B, 4, 6, 2, 1, 2), std::invalid_argument);
  // Without virtual stages Megatron-LM runs plain 1F1B, which has no such requirement.
  EXPECT_NO_THROW(pipeline_order(S::kInterleaved1F1B, 0, 4, 6, 1));
}

}  // namespace
}  // namespace dtsim::models
