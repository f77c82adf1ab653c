// The link fit: the simulator's closed form counts hops and bus bytes as the collective
// algorithms do, and the fit recovers the figures that made a set of timings.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "calibration/link_calibration.h"
#include "tests/calibration/measured_figures.h"

namespace dtsim::calibration {
namespace {

const CollectiveOp kOps[] = {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter,
                             CollectiveOp::kAllGather, CollectiveOp::kAllToAll,
                             CollectiveOp::kBroadcast, CollectiveOp::kSendRecv};

// Timings made by `truth`, each off by a fixed pattern of up to +-2%.
LinkCalibration timings_of(const LinkFit& truth, int ranks) {
  LinkCalibration links;
  links.ranks = ranks;
  int k = 0;
  for (CollectiveOp op : kOps) {
    CollectiveMeasurement m;
    m.op = op;
    for (int64_t bytes = 4096; bytes <= (64 << 20); bytes *= 4) {
      const double t =
          predicted_seconds(truth, op, ranks, Bytes(bytes)) * (1 + 0.02 * std::sin(k++));
      m.points.push_back(figures::point(Bytes(bytes), {t}));
    }
    links.collectives.push_back(m);
  }
  return links;
}

TEST(LinkFit, TheClosedFormCountsRingAndDirectHopsAndBusBytes) {
  const Bytes n = MiB(4);
  const double bytes = static_cast<double>(n.count());
  // Two ranks: a ring all-reduce crosses 2 hops and moves n (2 steps of n/2); all-gather 1
  // hop and n/2; send/recv 1 hop and n.
  EXPECT_EQ(collective_shape(CollectiveOp::kAllReduce, 2, n).hops, 2);
  EXPECT_NEAR(collective_shape(CollectiveOp::kAllReduce, 2, n).bus_bytes, bytes, 1);
  EXPECT_EQ(collective_shape(CollectiveOp::kAllGather, 2, n).hops, 1);
  EXPECT_NEAR(collective_shape(CollectiveOp::kAllGather, 2, n).bus_bytes, bytes / 2, 1);
  EXPECT_EQ(collective_shape(CollectiveOp::kSendRecv, 2, n).hops, 1);
  EXPECT_NEAR(collective_shape(CollectiveOp::kSendRecv, 2, n).bus_bytes, bytes, 1);
  // Four ranks: 2(p-1) = 6 hops and 2(p-1)/p x n for the all-reduce (nccl-tests' bus factor).
  EXPECT_EQ(collective_shape(CollectiveOp::kAllReduce, 4, n).hops, 6);
  EXPECT_NEAR(collective_shape(CollectiveOp::kAllReduce, 4, n).bus_bytes, 1.5 * bytes, 4);
  EXPECT_EQ(collective_shape(CollectiveOp::kReduceScatter, 4, n).hops, 3);
  EXPECT_NEAR(collective_shape(CollectiveOp::kReduceScatter, 4, n).bus_bytes, 0.75 * bytes, 4);
}

TEST(LinkFit, RecoversTheFiguresThatMadeTheTimings) {
  LinkFit truth;
  truth.base = Duration::us(2);
  truth.hop = Duration::ns(600);
  truth.bandwidth = Bandwidth::gb_per_s(8);
  // Four ranks: a ring crosses 3 hops, direct 1, so per call and per hop separate.
  const LinkFit four = fit_link(timings_of(truth, 4));
  EXPECT_NEAR(four.base.seconds(), 2e-6, 0.25e-6);
  EXPECT_NEAR(four.hop.seconds(), 0.6e-6, 0.15e-6);
  EXPECT_NEAR(four.bandwidth.bytes_per_second(), 8e9, 0.02 * 8e9);
  EXPECT_LT(four.median_error, 0.02);
  EXPECT_LT(four.worst_error, 0.04);
  EXPECT_LT(four.reducing_median_error, 0.02);
  // Two ranks: every data-moving collective crosses one hop, so only their sum is known,
  // and it goes per call.
  const LinkFit two = fit_link(timings_of(truth, 2));
  EXPECT_EQ(two.hop.count_ns(), 0);
  EXPECT_NEAR(two.base.seconds(), 2.6e-6, 0.3e-6);
  EXPECT_NEAR(two.bandwidth.bytes_per_second(), 8e9, 0.02 * 8e9);
  EXPECT_LT(two.median_error, 0.02);
}

TEST(LinkFit, FitsTheLinkToTheCollectivesThatOnlyMoveData) {
  // Reductions twice as slow as the link (their arithmetic) change nothing of the fit, and
  // their error against it says how much they add.
  LinkFit truth;
  truth.base = Duration::us(2);
  truth.hop = Duration::ns(600);
  truth.bandwidth = Bandwidth::gb_per_s(8);
  LinkCalibration links = timings_of(truth, 2);
  const LinkFit clean = fit_link(links);
  for (CollectiveMeasurement& c : links.collectives) {
    if (!is_reducing(c.op)) continue;
    for (CollectivePoint& p : c.points) {
      p.samples_s = {2 * p.stats.median_s};
      p.stats = stats_of(p.samples_s);
    }
  }
  const LinkFit slow = fit_link(links);
  EXPECT_EQ(slow.base, clean.base);
  EXPECT_EQ(slow.hop, clean.hop);
  EXPECT_DOUBLE_EQ(slow.bandwidth.bytes_per_second(), clean.bandwidth.bytes_per_second());
  EXPECT_NEAR(slow.reducing_median_error, 0.5, 0.02);
}

TEST(LinkFit, HoldsANegativeLatencyAtZero) {
  // Times that shrink less than linearly at small sizes would want a negative per-hop cost;
  // the fit keeps every figure non-negative.
  LinkCalibration links;
  links.ranks = 2;
  CollectiveMeasurement m;
  m.op = CollectiveOp::kSendRecv;
  for (int64_t bytes : {4096, 1 << 20, 16 << 20}) {
    m.points.push_back(figures::point(Bytes(bytes), {static_cast<double>(bytes) / 4e9}));
  }
  links.collectives.push_back(m);
  const LinkFit fit = fit_link(links);
  EXPECT_GE(fit.base.count_ns(), 0);
  EXPECT_GE(fit.hop.count_ns(), 0);
  EXPECT_NEAR(fit.bandwidth.bytes_per_second(), 4e9, 0.01 * 4e9);
}

TEST(LinkFit, OneSizeCannotGiveABandwidth) {
  LinkCalibration links;
  links.ranks = 2;
  CollectiveMeasurement m;
  m.op = CollectiveOp::kBroadcast;
  m.points.push_back(figures::point(KiB(4), {5e-6}));
  links.collectives.push_back(m);
  try {
    fit_link(links);
    ADD_FAILURE() << "a fit of one size passed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at least two message sizes"), std::string::npos);
  }
}

}  // namespace
}  // namespace dtsim::calibration
