// Collective time estimates: the closed forms, their agreement with a step-by-step walk of
// the plan under the same alpha-beta model, and what choose_algorithm picks.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/collectives/planner.h"
#include "tests/sim/alpha_beta_figures.h"

namespace dtsim {
namespace {

using Op = CollectiveOp;
using Algo = CollectiveAlgorithm;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

GroupLayout layout_of(int regions, int nodes_per_region, int per_node) {
  GroupLayout l;
  const int p = regions * nodes_per_region * per_node;
  for (int i = 0; i < p; ++i) {
    l.members.push_back(i);
    l.node_of.push_back(i / per_node);
    l.region_of.push_back(i / per_node / nodes_per_region);
  }
  return l;
}

using testing::cluster_figures;

// Walks the plan under the estimate's model: a step costs, for each level its transfers
// use, alpha + (bytes the busiest rank sends or receives at that level) / bandwidth, and
// the slowest level bounds it.
Duration walk(const CollectivePlan& plan, const GroupLayout& l, const AlphaBeta& ab) {
  std::map<int, size_t> index;
  for (size_t i = 0; i < l.members.size(); ++i) index[l.members[i]] = i;
  Duration time = Duration::zero();
  for (const Phase& ph : plan.phases) {
    std::array<std::map<int, int64_t>, 3> sent, received;
    for (const Transfer& t : ph.transfers) {
      const size_t a = index.at(t.src);
      const size_t b = index.at(t.dst);
      const int level = l.region_of[a] != l.region_of[b] ? 2 : l.node_of[a] != l.node_of[b] ? 1 : 0;
      sent[static_cast<size_t>(level)][t.src] += t.bytes.count();
      received[static_cast<size_t>(level)][t.dst] += t.bytes.count();
    }
    Duration step = Duration::zero();
    const std::array<Duration, 3> alpha = {ab.intra_node_alpha, ab.inter_node_alpha,
                                           ab.inter_region_alpha};
    const std::array<Bandwidth, 3> bw = {ab.intra_node_bw, ab.inter_node_bw, ab.inter_region_bw};
    for (size_t level = 0; level < 3; ++level) {
      int64_t busiest = 0;
      for (const auto& [rank, bytes] : sent[level]) busiest = std::max(busiest, bytes);
      for (const auto& [rank, bytes] : received[level]) busiest = std::max(busiest, bytes);
      if (busiest > 0) step = std::max(step, alpha[level] + Bytes(busiest) / bw[level]);
    }
    time += step * ph.repeat;
  }
  return time;
}

TEST(CollectiveEstimate, RingClosedForm) {
  const AlphaBeta ab = cluster_figures();
  for (int p : {2, 3, 8}) {
    const int64_t n = 1000003;
    const Duration one_node =
        estimate_time(Op::kAllReduce, Algo::kRing, layout_of(1, 1, p), Bytes(n), {}, ab);
    EXPECT_EQ(one_node,
              (ab.intra_node_alpha + Bytes(ceil_div(n, p)) / ab.intra_node_bw) * (2 * (p - 1)));
    // Across nodes every step waits for its inter-node hop.
    const Duration nodes =
        estimate_time(Op::kAllReduce, Algo::kRing, layout_of(1, p, 1), Bytes(n), {}, ab);
    EXPECT_EQ(nodes,
              (ab.inter_node_alpha + Bytes(ceil_div(n, p)) / ab.inter_node_bw) * (2 * (p - 1)));
    const Duration rs =
        estimate_time(Op::kReduceScatter, Algo::kRing, layout_of(1, p, 1), Bytes(n), {}, ab);
    EXPECT_EQ(rs, (ab.inter_node_alpha + Bytes(ceil_div(n, p)) / ab.inter_node_bw) * (p - 1));
  }
}

TEST(CollectiveEstimate, HierarchicalClosedForm) {
  const AlphaBeta ab = cluster_figures();
  const int nodes = 4;
  const int g = 8;
  const int64_t n = GiB(1).count() + 5;
  const Duration t =
      estimate_time(Op::kAllReduce, Algo::kHierarchical, layout_of(1, nodes, g), Bytes(n), {}, ab);
  const Duration intra = (ab.intra_node_alpha + Bytes(ceil_div(n, g)) / ab.intra_node_bw) * (g - 1);
  const Duration inter =
      (ab.inter_node_alpha + Bytes(ceil_div(ceil_div(n, g), nodes)) / ab.inter_node_bw) *
      (2 * (nodes - 1));
  EXPECT_EQ(t, intra + inter + intra);
}

TEST(CollectiveEstimate, TreeClosedForm) {
  const AlphaBeta ab = cluster_figures();
  const int p = 16;  // one per node; NCCL tree height 4
  const int64_t n = MiB(64).count();
  const CollectiveOptions o;
  const int64_t c = ceil_div(n / 2, o.chunk_bytes.count());
  const Duration t =
      estimate_time(Op::kAllReduce, Algo::kTree, layout_of(1, p, 1), Bytes(n), o, ab);
  // Full-pipeline step: an interior node moves 4 chunks (parent + 2 children, + its parent
  // in the other tree).
  EXPECT_EQ(t, (ab.inter_node_alpha + Bytes(4 * ceil_div(n / 2, c)) / ab.inter_node_bw) *
                   (2 * 4 + c - 1));
}

TEST(CollectiveEstimate, MatchesPlanWalk) {
  const AlphaBeta ab = cluster_figures();
  const std::vector<GroupLayout> layouts = {layout_of(1, 1, 8), layout_of(1, 4, 4),
                                            layout_of(2, 2, 2), layout_of(2, 2, 4),
                                            layout_of(1, 8, 1)};
  for (const GroupLayout& l : layouts) {
    for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather, Op::kBroadcast, Op::kReduce,
                  Op::kAllToAll, Op::kSendRecv}) {
      for (Algo a : algorithms_for(op)) {
        if (!applicability_error(op, a, l, {}).empty()) continue;
        for (int64_t n : {int64_t{1000}, int64_t{MiB(64).count() + 1}}) {
          SCOPED_TRACE(std::string(collective_op_name(op)) + "/" + std::string(algorithm_name(a)) +
                       " p=" + std::to_string(l.members.size()) + " n=" + std::to_string(n));
          const Duration est = estimate_time(op, a, l, Bytes(n), {}, ab);
          const Duration walked = walk(plan_collective(op, a, l, Bytes(n), {}), l, ab);
          if (a == Algo::kTree) {
            // Fill and drain steps are charged at the full-pipeline rate: an upper bound.
            EXPECT_LE(walked, est);
            EXPECT_GT(walked * 2, est);
          } else if (op == Op::kBroadcast || op == Op::kReduce) {
            // Chain: first chunk's trip + (c-1) slowest hops; the lockstep walk lies within
            // a factor of two (it is at least both terms' maximum).
            if (l.node_of.front() == l.node_of.back()) {
              EXPECT_EQ(est, walked);
            }
            EXPECT_LE(walked, est * 2);
            EXPECT_LE(est, walked * 2);
          } else {
            EXPECT_EQ(est, walked);
          }
        }
      }
    }
  }
}

TEST(CollectiveEstimate, TrivialCasesAndErrors) {
  const AlphaBeta ab = cluster_figures();
  EXPECT_EQ(estimate_time(Op::kAllReduce, Algo::kRing, layout_of(1, 1, 1), GiB(1), {}, ab),
            Duration::zero());
  EXPECT_EQ(estimate_time(Op::kAllReduce, Algo::kRing, layout_of(1, 2, 2), Bytes(0), {}, ab),
            Duration::zero());
  EXPECT_THROW(
      estimate_time(Op::kAllReduce, Algo::kHalvingDoubling, layout_of(1, 1, 6), GiB(1), {}, ab),
      std::invalid_argument);
  // A level the group does not use needs no figures; one it uses does.
  AlphaBeta intra_only;
  intra_only.intra_node_alpha = Duration::us(1);
  intra_only.intra_node_bw = Bandwidth::gb_per_s(100);
  EXPECT_GT(estimate_time(Op::kAllReduce, Algo::kRing, layout_of(1, 1, 4), MiB(1), {}, intra_only),
            Duration::zero());
  EXPECT_THROW(
      estimate_time(Op::kAllReduce, Algo::kRing, layout_of(1, 2, 2), MiB(1), {}, intra_only),
      std::invalid_argument);
}

TEST(CollectiveEstimate, ChoosesCrossRegionOverSlowWan) {
  const AlphaBeta ab = cluster_figures();
  const GroupLayout l = layout_of(2, 4, 8);
  for (Op op : {Op::kAllReduce, Op::kReduceScatter, Op::kAllGather}) {
    EXPECT_EQ(choose_algorithm(op, l, GiB(1), {}, ab), Algo::kCrossRegion)
        << collective_op_name(op);
  }
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, layout_of(3, 2, 4), MiB(256), {}, ab),
            Algo::kCrossRegion);
}

TEST(CollectiveEstimate, ChoosesTreeForSmallMessagesOnManyNodes) {
  const AlphaBeta ab = cluster_figures();
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, layout_of(1, 96, 8), KiB(8), {}, ab), Algo::kTree);
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, layout_of(1, 100, 1), KiB(4), {}, ab), Algo::kTree);
  EXPECT_EQ(choose_algorithm(Op::kBroadcast, layout_of(1, 100, 1), KiB(4), {}, ab), Algo::kTree);
}

TEST(CollectiveEstimate, ChoosesRingOrHierarchicalForLargeMessages) {
  const AlphaBeta ab = cluster_figures();
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, layout_of(1, 16, 8), GiB(1), {}, ab),
            Algo::kHierarchical);
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, layout_of(1, 12, 6), GiB(1), {}, ab),
            Algo::kHierarchical);
  // With a NIC per member the ring's channels (one ring per member of a node) leave every
  // node through all of them, as hierarchical's inter-node rings do: ties go to the ring.
  GroupLayout railed = layout_of(1, 16, 8);
  railed.nic_per_member = true;
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, railed, GiB(1), {}, ab), Algo::kRing);
  // One member per node (and one node) leave hierarchical equal to the ring: ties go to ring.
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, layout_of(1, 12, 1), GiB(1), {}, ab), Algo::kRing);
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, layout_of(1, 1, 6), GiB(1), {}, ab), Algo::kRing);
  EXPECT_EQ(choose_algorithm(Op::kBroadcast, layout_of(1, 12, 1), GiB(1), {}, ab), Algo::kRing);
}

TEST(CollectiveEstimate, ChooseOnlyAmongApplicable) {
  const AlphaBeta ab = cluster_figures();
  EXPECT_EQ(choose_algorithm(Op::kAllToAll, layout_of(1, 2, 4), MiB(1), {}, ab), Algo::kDirect);
  // Zero bytes: every estimate is zero and the first in algorithms_for wins.
  EXPECT_EQ(choose_algorithm(Op::kAllReduce, layout_of(1, 2, 4), Bytes(0), {}, ab), Algo::kRing);
  EXPECT_THROW(choose_algorithm(Op::kSendRecv, layout_of(1, 1, 3), MiB(1), {}, ab),
               std::invalid_argument);
}

}  // namespace
}  // namespace dtsim
