// Placement of plan coordinates on cluster ranks: axis orders, explicit rank maps, groups.
#include "models/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace dtsim::models {
namespace {

using A = ParallelAxis;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<A> kMegatron = {A::kTp, A::kCp, A::kDp, A::kPp};

RankCoords at(int dp, int pp, int tp, int cp = 0) {
  RankCoords c;
  c.dp = dp;
  c.pp = pp;
  c.tp = tp;
  c.cp = cp;
  return c;
}

std::string message_of(int dp, int pp, int tp, int cp, std::vector<A> order, std::vector<int> map) {
  try {
    Placement(dp, pp, tp, cp, std::move(order), std::move(map));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Placement, DefaultOrderPutsTensorParallelInnermost) {
  // dp 2, pp 2, tp 2, cp 1 with tp, cp, dp, pp: position = tp + 2 * dp + 4 * pp (cp has
  // size 1), so ranks 0-1 are one TP group, 0 and 2 one DP group, 0 and 4 one pipeline.
  const Placement p(2, 2, 2, 1, kMegatron, {});
  EXPECT_EQ(p.size(), 8);
  EXPECT_EQ(p.size(A::kTp), 2);
  EXPECT_EQ(p.size(A::kCp), 1);
  EXPECT_EQ(p.rank(at(0, 0, 1)), 1);
  EXPECT_EQ(p.rank(at(1, 0, 0)), 2);
  EXPECT_EQ(p.rank(at(1, 1, 1)), 7);
  EXPECT_THAT(p.group(A::kTp, p.coords(0)), ElementsAre(0, 1));
  EXPECT_THAT(p.group(A::kTp, p.coords(6)), ElementsAre(6, 7));
  EXPECT_THAT(p.group(A::kDp, p.coords(1)), ElementsAre(1, 3));
  EXPECT_THAT(p.group(A::kPp, p.coords(3)), ElementsAre(3, 7));
  EXPECT_THAT(p.group(A::kCp, p.coords(5)), ElementsAre(5));
  const RankCoords c = p.coords(6);  // position 6 = tp 0, dp 1, pp 1
  EXPECT_EQ(c.tp, 0);
  EXPECT_EQ(c.dp, 1);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(c.cp, 0);
}

TEST(Placement, CoordsAndRankRoundTrip) {
  const Placement p(3, 2, 2, 2, {A::kCp, A::kPp, A::kTp, A::kDp}, {});
  ASSERT_EQ(p.size(), 24);
  for (int r = 0; r < p.size(); ++r) EXPECT_EQ(p.rank(p.coords(r)), r) << r;
}

TEST(Placement, AxisOrderPermutationMovesTheInnermostAxis) {
  // dp innermost: position = dp + 2 * tp + 4 * cp + 4 * pp; the TP peers of rank 0 are
  // two apart, its DP peer is rank 1.
  const Placement p(2, 2, 2, 1, {A::kDp, A::kTp, A::kCp, A::kPp}, {});
  EXPECT_THAT(p.group(A::kTp, p.coords(0)), ElementsAre(0, 2));
  EXPECT_THAT(p.group(A::kDp, p.coords(0)), ElementsAre(0, 1));
  EXPECT_THAT(p.group(A::kPp, p.coords(0)), ElementsAre(0, 4));
  // Pipeline innermost: the stages of a replica are consecutive ranks.
  const Placement q(2, 4, 1, 1, {A::kPp, A::kTp, A::kCp, A::kDp}, {});
  EXPECT_THAT(q.group(A::kPp, q.coords(5)), ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(q.group(A::kDp, q.coords(5)), ElementsAre(1, 5));
}

TEST(Placement, MultiAxisGroupsFollowPlacementOrder) {
  // dp 2, cp 2, tp 2, pp 1, default order: position = tp + 2 * cp + 4 * dp. The gradient
  // group of rank 1 (tp 1) spans dp and cp: positions 1, 3, 5, 7, cp varying fastest.
  const Placement p(2, 1, 2, 2, kMegatron, {});
  EXPECT_THAT(p.group({A::kDp, A::kCp}, p.coords(1)), ElementsAre(1, 3, 5, 7));
  // Listing the axes in another order changes nothing: placement order decides.
  EXPECT_THAT(p.group({A::kCp, A::kDp}, p.coords(1)), ElementsAre(1, 3, 5, 7));
  // A replica: everything but dp.
  EXPECT_THAT(p.group({A::kTp, A::kPp, A::kCp}, p.coords(6)), ElementsAre(4, 5, 6, 7));
}

TEST(Placement, RankMapPermutesPositions) {
  // rank_map[position] = rank: the reversed map puts position 0 (all coordinates zero) on
  // rank 7 and position 1 (tp 1) on rank 6.
  const Placement p(2, 2, 2, 1, kMegatron, {7, 6, 5, 4, 3, 2, 1, 0});
  EXPECT_EQ(p.rank(at(0, 0, 0)), 7);
  EXPECT_EQ(p.coords(7).tp, 0);
  EXPECT_EQ(p.coords(6).tp, 1);
  EXPECT_EQ(p.coords(0).pp, 1);
  EXPECT_THAT(p.group(A::kTp, p.coords(7)), ElementsAre(7, 6));
  EXPECT_THAT(p.group(A::kPp, p.coords(7)), ElementsAre(7, 3));
  // A map that swaps two positions only moves those two ranks.
  const Placement q(4, 1, 1, 1, kMegatron, {0, 2, 1, 3});
  EXPECT_EQ(q.coords(2).dp, 1);
  EXPECT_EQ(q.coords(1).dp, 2);
  EXPECT_THAT(q.group(A::kDp, q.coords(0)), ElementsAre(0, 2, 1, 3));
}

TEST(Placement, RejectsBadAxisOrders) {
  EXPECT_THAT(message_of(2, 1, 1, 1, {A::kTp, A::kTp, A::kDp, A::kPp}, {}),
              HasSubstr("axis order"));
  EXPECT_THAT(message_of(2, 1, 1, 1, {A::kTp, A::kDp, A::kPp}, {}), HasSubstr("axis order"));
  EXPECT_THAT(message_of(2, 1, 1, 1, {A::kTp, A::kCp, A::kDp, A::kPp, A::kPp}, {}),
              HasSubstr("axis order"));
}

TEST(Placement, RejectsBadRankMaps) {
  EXPECT_THAT(message_of(2, 2, 1, 1, kMegatron, {0, 1, 2}), HasSubstr("3 entries"));
  EXPECT_THAT(message_of(2, 2, 1, 1, kMegatron, {0, 1, 1, 3}), HasSubstr("1 is repeated"));
  EXPECT_THAT(message_of(2, 2, 1, 1, kMegatron, {0, 1, 2, 4}), HasSubstr("4 is out of range"));
  EXPECT_THAT(message_of(2, 2, 1, 1, kMegatron, {0, -1, 2, 3}), HasSubstr("out of range"));
}

TEST(Placement, AxisNames) {
  EXPECT_EQ(parallel_axis_name(A::kTp), "tp");
  EXPECT_EQ(parallel_axis_name(A::kCp), "cp");
  EXPECT_EQ(parallel_axis_name(A::kDp), "dp");
  EXPECT_EQ(parallel_axis_name(A::kPp), "pp");
}

}  // namespace
}  // namespace dtsim::models
