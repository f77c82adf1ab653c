// The measured model's tags and figures: measured for a kernel timed as it is, interpolated
// in log space between the sizes of its family, extrapolated beyond them, and the roofline
// for a kernel of no measured family or a device the database did not measure.
#include <gtest/gtest.h>

#include <cmath>

#include "calibration/measured_cost_model.h"
#include "tests/calibration/measured_figures.h"
#include "models/cost_model.h"
#include "sim/device_catalog.h"

namespace dtsim::calibration {
namespace {

using figures::beside;
using figures::entry;
using figures::gemm;

CostDatabase database(const std::vector<CostEntry>& entries) {
  CostDatabase db;
  db.device.backend = "cpu";
  db.device.name = "Test CPU";
  db.device.catalog_name = "CPU";
  db.entries = entries;
  return db;
}

const DeviceSpec& cpu() { return *find_builtin_device("CPU"); }

MeasuredCostModel model_of(const CostDatabase& db) {
  return MeasuredCostModel(db, "CPU", std::make_unique<models::RooflineCostModel>());
}

TEST(MeasuredCostModel, TagsEachPriceWithWhereItCameFrom) {
  // Time 1 ms at 2^24 FLOPs x (work / 2^24)^0.8, at three sizes.
  const auto t = [](double flops) { return 1e-3 * std::pow(flops / 16777216.0, 0.8); };
  const OpSignature small = gemm(128, 256, 256), mid = gemm(256, 256, 256),
                    big = gemm(512, 512, 512);
  const auto model = model_of(
      database({entry(small, t(small.flops)), entry(mid, t(mid.flops)), entry(big, t(big.flops))}));
  // Measured: the same kernel, whatever the model called it.
  OpSignature renamed = mid;
  renamed.name = "attn.proj";
  renamed.recomputed = true;
  const OpCost exact = model.price(renamed, cpu());
  EXPECT_EQ(exact.source, CostSource::kMeasured);
  EXPECT_DOUBLE_EQ(exact.time.seconds(), Duration::from_seconds(t(mid.flops)).seconds());
  // Interpolated: between mid and big, log-linear in work, so the power law is exact.
  const OpSignature between = gemm(384, 256, 256);
  const OpCost in = model.price(between, cpu());
  EXPECT_EQ(in.source, CostSource::kInterpolated);
  EXPECT_NEAR(in.time.seconds() / t(between.flops), 1, 1e-6);
  // Extrapolated: above the largest, in proportion to the work; below the smallest, along
  // the slope of the two smallest (0.8 here).
  const OpSignature huge = gemm(1024, 1024, 1024);
  const OpCost above = model.price(huge, cpu());
  EXPECT_EQ(above.source, CostSource::kExtrapolated);
  EXPECT_NEAR(above.time.seconds(), t(big.flops) * 8, 1e-9);
  const OpSignature tiny = gemm(32, 256, 256);
  const OpCost below = model.price(tiny, cpu());
  EXPECT_EQ(below.source, CostSource::kExtrapolated);
  EXPECT_NEAR(below.time.seconds() / t(tiny.flops), 1, 1e-6);
  // Another family (no transpose of B) and another device: the roofline.
  OpSignature plain = mid;
  plain.gemm.transpose_b = false;
  EXPECT_EQ(model.price(plain, cpu()).source, CostSource::kRoofline);
  EXPECT_EQ(model.price(mid, *find_builtin_device("H100")).source, CostSource::kRoofline);
  EXPECT_EQ(model.price(mid, *find_builtin_device("H100")).time,
            models::RooflineCostModel().price(mid, *find_builtin_device("H100")).time);
}

TEST(MeasuredCostModel, MoreWorkNeverCostsLess) {
  // A dip at the middle size (noise, or a shape the BLAS likes) is lifted to its neighbour.
  const OpSignature a = gemm(128, 128, 128), b = gemm(256, 256, 256), c = gemm(512, 512, 512);
  const auto model = model_of(database({entry(a, 2e-3), entry(b, 1e-3), entry(c, 8e-3)}));
  const OpCost between_ab = model.price(gemm(192, 192, 192), cpu());
  EXPECT_NEAR(between_ab.time.seconds(), 2e-3, 1e-9);
  EXPECT_GE(model.price(gemm(384, 384, 384), cpu()).time.seconds(), 2e-3);
}

TEST(MeasuredCostModel, AZeroTimeInAHandMadeDatabaseStaysFinite) {
  const auto model =
      model_of(database({entry(gemm(64, 64, 64), 0.0), entry(gemm(256, 256, 256), 1e-4)}));
  for (const OpSignature& op : {gemm(32, 64, 64), gemm(128, 128, 128), gemm(512, 512, 512)}) {
    const OpCost c = model.price(op, cpu());
    EXPECT_TRUE(std::isfinite(c.time.seconds()));
    EXPECT_GE(c.time.seconds(), 0);
  }
}

TEST(MeasuredCostModel, MemoryBoundKernelsInterpolateOverTheirBytes) {
  const auto norm = [](int64_t rows) {
    OpSignature op;
    op.kind = KernelKind::kLayerNorm;
    op.storage = op.math = DType::kFp32;
    op.rows = rows;
    op.width = 1024;
    op.bytes = 8.0 * static_cast<double>(rows) * 1024;
    return op;
  };
  const auto model = model_of(database({entry(norm(256), 1e-4), entry(norm(1024), 4e-4)}));
  const OpCost c = model.price(norm(512), cpu());
  EXPECT_EQ(c.source, CostSource::kInterpolated);
  EXPECT_NEAR(c.time.seconds(), 2e-4, 1e-9);
  // Another traffic per element is another kernel's family.
  OpSignature heavier = norm(512);
  heavier.bytes *= 2;
  EXPECT_EQ(model.price(heavier, cpu()).source, CostSource::kRoofline);
}

TEST(MeasuredCostModel, HeldOutSizesArePredictedFromTheRest) {
  // Six sizes of one family on a power law: every fifth inner size held out (the second).
  std::vector<CostEntry> entries;
  for (int64_t m : {64, 128, 256, 512, 1024, 2048}) {
    const OpSignature op = gemm(m, 256, 256);
    entries.push_back(entry(op, 1e-6 * std::pow(op.flops / 1e6, 0.9)));
  }
  const auto held = holdout_errors(database(entries), 5);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].op.gemm.m, 128);
  EXPECT_NEAR(held[0].error, 0, 1e-4);                         // durations are whole nanoseconds
  EXPECT_EQ(holdout_errors(database(entries), 2).size(), 2u);  // sizes 128 and 512
}

}  // namespace
}  // namespace dtsim::calibration

namespace dtsim::calibration {
namespace {

TEST(MeasuredCostModel, AnInStepTimeWinsOverTheIsolatedOneInEitherOrder) {
  const OpSignature a = gemm(128, 128, 128), b = gemm(512, 512, 512);
  CostEntry in_step = entry(a, 3e-3);
  in_step.context = MeasurementContext::kInStep;
  for (const auto& entries : {std::vector<CostEntry>{entry(a, 1e-3), in_step, entry(b, 8e-3)},
                              std::vector<CostEntry>{in_step, entry(a, 1e-3), entry(b, 8e-3)}}) {
    const auto model = model_of(database(entries));
    EXPECT_DOUBLE_EQ(model.price(a, cpu()).time.seconds(), Duration::from_seconds(3e-3).seconds());
    // The family curve goes through the in-step point too: halfway in work lies between 3 and
    // 8 ms, not between 1 and 8.
    const OpCost mid = model.price(gemm(256, 256, 256), cpu());
    EXPECT_EQ(mid.source, CostSource::kInterpolated);
    EXPECT_GT(mid.time.seconds(), 3e-3);
  }
}

TEST(MeasuredCostModel, KernelsTimedBesideCoRunnersArePricedWithTheirTimeAloneToo) {
  const OpSignature small = gemm(128, 128, 128), big = gemm(512, 512, 512);
  CostDatabase db = database({beside(small, 2e-3, 1e-3), beside(big, 40e-3, 32e-3)});
  db.device.co_runners = 1;
  const auto model = model_of(db);
  EXPECT_TRUE(model.prices_crowding());
  const OpCost exact = model.price(small, cpu());
  EXPECT_EQ(exact.co_runners, 1);
  EXPECT_DOUBLE_EQ(exact.time.seconds(), Duration::from_seconds(2e-3).seconds());
  EXPECT_DOUBLE_EQ(exact.alone.seconds(), Duration::from_seconds(1e-3).seconds());
  // Between the sizes each time follows its own curve: log-log, halfway in log work.
  const OpSignature mid = gemm(256, 256, 256);  // 8x the small one's work, 1/8 the big one's
  const OpCost in = model.price(mid, cpu());
  EXPECT_EQ(in.co_runners, 1);
  EXPECT_NEAR(in.time.seconds(), std::sqrt(2e-3 * 40e-3), 1e-9);
  EXPECT_NEAR(in.alone.seconds(), std::sqrt(1e-3 * 32e-3), 1e-9);
  // The roofline knows no co-runners.
  OpSignature plain = small;
  plain.gemm.transpose_b = false;
  EXPECT_EQ(model.price(plain, cpu()).co_runners, 0);
  // Without co-runners in the database, an alone time is not a second figure.
  db.device.co_runners = 0;
  EXPECT_FALSE(model_of(db).prices_crowding());
  EXPECT_EQ(model_of(db).price(small, cpu()).co_runners, 0);
}

TEST(MeasuredCostModel, AnInStepTimeTakesItsFamilyOffTheAloneCurve) {
  const OpSignature a = gemm(128, 128, 128), b = gemm(512, 512, 512);
  CostEntry in_step = entry(a, 3e-3);
  in_step.context = MeasurementContext::kInStep;
  CostDatabase db = database({beside(a, 2e-3, 1e-3), in_step, beside(b, 40e-3, 32e-3)});
  db.device.co_runners = 1;
  const auto model = model_of(db);
  // The in-step time holds whatever its neighbours did: it is not crowded again.
  EXPECT_EQ(model.price(a, cpu()).co_runners, 0);
  EXPECT_EQ(model.price(b, cpu()).co_runners, 1);  // measured as it was
  // Between them, one curve ends in a time that has no alone counterpart.
  EXPECT_EQ(model.price(gemm(256, 256, 256), cpu()).co_runners, 0);
}

}  // namespace
}  // namespace dtsim::calibration
