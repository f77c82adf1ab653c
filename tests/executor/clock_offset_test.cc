// estimate_clock_offset: the midpoint of the shortest round trip, within half of it.
#include <gtest/gtest.h>

#include <vector>

#include "executor/clock_offset.h"

namespace dtsim::executor {
namespace {

// A ping sent at local `sent` that takes `out` ns to reach a reference clock running
// `offset` ns ahead, answered at once, and `back` ns to return.
ClockSample exchange(int64_t sent, int64_t offset, int64_t out, int64_t back) {
  return {sent, sent + out + offset, sent + out + back};
}

TEST(ClockOffset, SymmetricRoundTripsGiveTheOffsetExactly) {
  const std::vector<ClockSample> s = {exchange(1000, 5'000'000, 300, 300),
                                      exchange(5000, 5'000'000, 800, 800)};
  const ClockOffset o = estimate_clock_offset(s);
  EXPECT_EQ(o.offset_ns, 5'000'000);
  EXPECT_EQ(o.uncertainty_ns, 300);
  EXPECT_EQ(o.samples, 2);
}

TEST(ClockOffset, TheShortestRoundTripWinsAndBoundsTheError) {
  // Asymmetric delays: the error of a sample is (out - back) / 2, at most half its trip.
  const std::vector<ClockSample> s = {exchange(0, -42'000, 9000, 1000),
                                      exchange(20'000, -42'000, 150, 50),
                                      exchange(40'000, -42'000, 4000, 4000)};
  const ClockOffset o = estimate_clock_offset(s);
  EXPECT_EQ(o.uncertainty_ns, 100);
  EXPECT_NEAR(static_cast<double>(o.offset_ns), -42'000.0, 100.0);
  EXPECT_EQ(o.offset_ns, -42'000 + 50);  // (150 - 50) / 2 off, as the shortest trip allows
}

TEST(ClockOffset, RefusesNoSamplesAndSamplesThatArriveBeforeTheyLeave) {
  EXPECT_THROW(estimate_clock_offset({}), std::invalid_argument);
  const std::vector<ClockSample> bad = {{1000, 0, 999}};
  EXPECT_THROW(estimate_clock_offset(bad), std::invalid_argument);
}

}  // namespace
}  // namespace dtsim::executor
