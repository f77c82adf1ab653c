// The measured collective model: calls like the measured ones are priced from the points
// (exact, interpolated in log-log, extrapolated beyond), anything else is left to the
// network model.
#include <gtest/gtest.h>

#include <cmath>

#include "calibration/measured_collective_model.h"
#include "tests/calibration/measured_figures.h"

namespace dtsim::calibration {
namespace {

LinkCalibration two_rank_all_reduce() {
  return figures::two_rank_all_reduce({{int64_t{1} << 20, 2e-4},
                                       {int64_t{4} << 20, 8e-4},
                                       {int64_t{16} << 20, 1.2e-2}});
}

GroupLayout on_nodes(std::vector<int> nodes) {
  GroupLayout g;
  for (size_t i = 0; i < nodes.size(); ++i) {
    g.members.push_back(static_cast<int>(i));
    g.node_of.push_back(nodes[i]);
    g.region_of.push_back(0);
  }
  return g;
}

TEST(MeasuredCollectiveModel, PricesCallsLikeTheMeasuredOnesFromThePoints) {
  const MeasuredCollectiveModel model({two_rank_all_reduce()}, "CPU");
  DeviceSpec cpu;
  cpu.name = "CPU";
  const GroupLayout pair = on_nodes({0, 0});
  const auto exact = model.price(CollectiveOp::kAllReduce, pair, cpu, MiB(4));
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->source, CostSource::kMeasured);
  EXPECT_EQ(exact->time, Duration::us(800));
  // 8 MiB lies halfway in log bytes between 4 and 16 MiB: the geometric mean of the times.
  const auto between = model.price(CollectiveOp::kAllReduce, pair, cpu, MiB(8));
  ASSERT_TRUE(between);
  EXPECT_EQ(between->source, CostSource::kInterpolated);
  EXPECT_NEAR(between->time.seconds(), std::sqrt(8e-4 * 1.2e-2), 1e-8);
  const auto beyond = model.price(CollectiveOp::kAllReduce, pair, cpu, MiB(32));
  ASSERT_TRUE(beyond);
  EXPECT_EQ(beyond->source, CostSource::kExtrapolated);
  EXPECT_NEAR(beyond->time.seconds(), 2.4e-2, 1e-8);
}

TEST(MeasuredCollectiveModel, LeavesOtherGroupsOpsAndDevicesToTheNetworkModel) {
  const MeasuredCollectiveModel model({two_rank_all_reduce()}, "CPU");
  DeviceSpec cpu;
  cpu.name = "CPU";
  DeviceSpec gpu;
  gpu.name = "H100";
  EXPECT_FALSE(model.price(CollectiveOp::kAllReduce, on_nodes({0, 1}), cpu, MiB(4)));
  EXPECT_FALSE(model.price(CollectiveOp::kAllReduce, on_nodes({0, 0, 0, 0}), cpu, MiB(4)));
  EXPECT_FALSE(model.price(CollectiveOp::kAllGather, on_nodes({0, 0}), cpu, MiB(4)));
  EXPECT_FALSE(model.price(CollectiveOp::kAllReduce, on_nodes({0, 0}), gpu, MiB(4)));
}

TEST(MeasuredCollectiveModel, ACallTimedInsideStepsPricesItsSizeAndOnlyThat) {
  LinkCalibration links = two_rank_all_reduce();
  CollectiveMeasurement in_step;
  in_step.op = CollectiveOp::kAllReduce;
  in_step.points = {figures::point(MiB(4), {2.4e-3, 2.5e-3, 2.6e-3})};
  links.in_step = {in_step};
  const MeasuredCollectiveModel model({links}, "CPU");
  DeviceSpec cpu;
  cpu.name = "CPU";
  const GroupLayout pair = on_nodes({0, 0});
  const auto at_its_size = model.price(CollectiveOp::kAllReduce, pair, cpu, MiB(4));
  ASSERT_TRUE(at_its_size);
  EXPECT_EQ(at_its_size->source, CostSource::kMeasured);
  EXPECT_NEAR(at_its_size->time.seconds(), 2.5e-3, 1e-12);  // not the probe's 800 us
  // Other sizes keep the probe's curve, which the in-step point does not bend.
  const auto between = model.price(CollectiveOp::kAllReduce, pair, cpu, MiB(8));
  ASSERT_TRUE(between);
  EXPECT_NEAR(between->time.seconds(), std::sqrt(8e-4 * 1.2e-2), 1e-8);
  EXPECT_EQ(model.price(CollectiveOp::kAllReduce, pair, cpu, MiB(1))->time, Duration::us(200));
  // Other groups are still the network's.
  EXPECT_FALSE(model.price(CollectiveOp::kAllReduce, on_nodes({0, 1}), cpu, MiB(4)));
}

TEST(MeasuredCollectiveModel, HoldsOutInnerSizesAndPredictsThemFromTheRest) {
  const std::vector<CollectiveHoldout> held = collective_holdout_errors(two_rank_all_reduce());
  ASSERT_EQ(held.size(), 1u);  // only 4 MiB lies between two others
  EXPECT_EQ(held[0].bytes, MiB(4));
  // From 1 and 16 MiB: log-log halfway, sqrt(2e-4 x 1.2e-2).
  EXPECT_NEAR(held[0].predicted_s, std::sqrt(2e-4 * 1.2e-2), 1e-9);
  EXPECT_NEAR(held[0].error, std::sqrt(2e-4 * 1.2e-2) / 8e-4 - 1, 1e-6);
}

}  // namespace
}  // namespace dtsim::calibration
