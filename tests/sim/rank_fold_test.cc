// Ranks that run alike (fold_ranks): classes by template and device, the representatives
// that data-parallel calls fold over, mirrors of tensor-parallel calls and pipeline
// messages, and the graphs whose interactions do not map.
#include "sim/rank_fold.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using ::testing::ElementsAre;
using testing::fabric;
using ::testing::HasSubstr;
using testing::node_group;
using testing::one_region;

Cluster h100s(int nodes, int per_node) {
  return build_cluster(one_region(node_group(nodes, per_node), fabric(FabricKind::kSingleSwitch)));
}

uint32_t call_over(TaskGraph& g, std::vector<int> members, const char* label) {
  CollectiveCall c;
  c.members = std::move(members);
  c.bytes = MiB(8);
  c.label = label;
  return g.add_collective(c);
}

Task collective_task(int rank, uint32_t call, std::vector<TaskId> deps) {
  Task t;
  t.kind = TaskKind::kCollective;
  t.rank = rank;
  t.name = "all-reduce";
  t.collective = call;
  t.deps = std::move(deps);
  return t;
}

Task message(TaskKind kind, int rank, int peer, std::vector<TaskId> deps) {
  Task t;
  t.kind = kind;
  t.rank = rank;
  t.peer = peer;
  t.tag = 5;
  t.bytes = MiB(1);
  t.name = kind == TaskKind::kSend ? "send" : "recv";
  t.deps = std::move(deps);
  return t;
}

// Every rank computes, then joins its call in `call_of_rank` (a list per rank, in order).
TaskGraph compute_then_calls(const std::vector<std::vector<uint32_t>>& call_of_rank, TaskGraph g,
                             bool bracket = true) {
  g.stream("compute");
  for (int r = 0; r < static_cast<int>(call_of_rank.size()); ++r) {
    if (bracket) g.begin_rank(r);
    TaskId last = g.add(testing::compute(r, 0, Duration::ms(1)));
    for (uint32_t c : call_of_rank[r]) last = g.add(collective_task(r, c, {last}));
    if (bracket) g.end_rank();
  }
  return g;
}

RankFold checked_fold(const TaskGraph& g, const Cluster& c) {
  EXPECT_THAT(g.validate(c.num_ranks()), ::testing::IsEmpty());
  return fold_ranks(g, c);
}

TEST(RankFold, DataParallelReplicasFoldOntoOneRank) {
  const Cluster c = h100s(1, 4);
  TaskGraph g;
  call_over(g, {0, 1, 2, 3}, "dp grads");
  g = compute_then_calls({{0}, {0}, {0}, {0}}, std::move(g));
  const RankFold f = checked_fold(g, c);
  EXPECT_TRUE(f.folds()) << f.inconsistent;
  EXPECT_THAT(f.representative, ElementsAre(0, 0, 0, 0));
  EXPECT_EQ(f.classes, 1);
  EXPECT_EQ(f.largest_class, 4);
  EXPECT_THAT(f.call_source, ElementsAre(0u));
  EXPECT_EQ(f.mirror_calls, 0);
}

TEST(RankFold, TensorParallelPeersSplitFromTheReplicasTheyFoldOver) {
  // Two replicas of two tensor-parallel ranks (rank = 2 replica + t): every rank runs the
  // same tasks, so one template holds them all; but a replica's tensor-parallel call needs
  // its members apart, so the classes split by the place in that call.
  const Cluster c = h100s(1, 4);
  TaskGraph g;
  call_over(g, {0, 1}, "tp 0");
  call_over(g, {2, 3}, "tp 1");
  call_over(g, {0, 2}, "dp 0");
  call_over(g, {1, 3}, "dp 1");
  g = compute_then_calls({{0, 2}, {0, 3}, {1, 2}, {1, 3}}, std::move(g));
  const RankFold f = checked_fold(g, c);
  EXPECT_TRUE(f.folds()) << f.inconsistent;
  EXPECT_THAT(f.representative, ElementsAre(0, 1, 0, 1));
  EXPECT_EQ(f.classes, 2);
  EXPECT_EQ(f.largest_class, 2);
  // The second replica's tensor-parallel call mirrors the first's; the data-parallel calls
  // each have a representative among their members.
  EXPECT_THAT(f.call_source, ElementsAre(0u, 0u, 2u, 3u));
  EXPECT_EQ(f.mirror_calls, 1);
}

// Two replicas of two tensor-parallel ranks whose tensor ranks differ (the second computes
// twice), so that each tensor rank is a template of its own: `tp1` is the second replica's
// tensor-parallel call, priced or ordered as a test needs.
TaskGraph two_templates_by_two_replicas(CollectiveCall tp1) {
  TaskGraph g;
  call_over(g, {0, 1}, "tp 0");
  g.add_collective(std::move(tp1));
  call_over(g, {0, 2}, "dp 0");
  call_over(g, {1, 3}, "dp 1");
  g.stream("compute");
  const std::vector<std::vector<uint32_t>> calls = {{0, 2}, {0, 3}, {1, 2}, {1, 3}};
  for (int r = 0; r < 4; ++r) {
    g.begin_rank(r);
    TaskId last = g.add(testing::compute(r, 0, Duration::ms(1)));
    if (r % 2 == 1) last = g.add(testing::compute(r, 0, Duration::ms(1), {last}));
    for (uint32_t c : calls[r]) last = g.add(collective_task(r, c, {last}));
    g.end_rank();
  }
  return g;
}

TEST(RankFold, AMirrorPricedOtherwiseOrInAnotherOrderFoldsNothing) {
  const Cluster c = h100s(1, 4);
  CollectiveCall tp1;
  tp1.members = {2, 3};
  tp1.bytes = MiB(8);
  tp1.label = "tp 1";
  RankFold f = checked_fold(two_templates_by_two_replicas(tp1), c);
  EXPECT_TRUE(f.folds()) << f.inconsistent;
  EXPECT_THAT(f.representative, ElementsAre(0, 1, 0, 1));
  EXPECT_THAT(f.call_source, ElementsAre(0u, 0u, 2u, 3u));

  tp1.bytes = MiB(16);
  f = checked_fold(two_templates_by_two_replicas(tp1), c);
  EXPECT_FALSE(f.consistent());
  EXPECT_THAT(f.inconsistent, HasSubstr("call 1 (\"tp 1\") mirrors call 0 (\"tp 0\"), but the "
                                        "two are not priced alike"));

  // Ranks 3 and 2 stand on 1 and 0: the ring would run the other way round.
  tp1.bytes = MiB(8);
  tp1.members = {3, 2};
  f = checked_fold(two_templates_by_two_replicas(tp1), c);
  EXPECT_FALSE(f.consistent());
  EXPECT_THAT(f.inconsistent, HasSubstr("its members do not map in order onto that call's"));
}

TEST(RankFold, PipelineMessagesMirrorTheFirstReplicas) {
  // Two replicas of a two-stage pipeline (rank = 2 replica + stage), each stage's
  // replicas joined by a data-parallel call.
  const Cluster c = h100s(1, 4);
  TaskGraph g;
  g.stream("compute");
  call_over(g, {0, 2}, "dp stage 0");
  call_over(g, {1, 3}, "dp stage 1");
  for (int r = 0; r < 4; ++r) {
    const int stage = r % 2;
    g.begin_rank(r);
    if (stage == 0) {
      const TaskId fwd = g.add(testing::compute(r, 0, Duration::ms(1)));
      const TaskId send = g.add(message(TaskKind::kSend, r, r + 1, {fwd}));
      g.add(collective_task(r, 0, {send}));
    } else {
      const TaskId recv = g.add(message(TaskKind::kRecv, r, r - 1, {}));
      const TaskId fwd = g.add(testing::compute(r, 0, Duration::ms(2), {recv}));
      g.add(collective_task(r, 1, {fwd}));
    }
    g.end_rank();
  }
  const RankFold f = checked_fold(g, c);
  EXPECT_TRUE(f.folds()) << f.inconsistent;
  EXPECT_THAT(f.representative, ElementsAre(0, 1, 0, 1));
  EXPECT_EQ(f.messages, 2);
  EXPECT_EQ(f.mirror_messages, 1);
  EXPECT_EQ(f.mirror_calls, 0);
}

TEST(RankFold, AMessageToAnotherReplicasStageFoldsNothing) {
  // Stage 0 of each replica sends to stage 1 of the other: rank 2's send (to rank 1) has
  // no image, as its representative's goes to rank 3.
  const Cluster c = h100s(1, 4);
  TaskGraph g;
  g.stream("compute");
  for (int r = 0; r < 4; ++r) {
    g.begin_rank(r);
    if (r % 2 == 0) {
      g.add(message(TaskKind::kSend, r, 3 - r, {}));
    } else {
      g.add(message(TaskKind::kRecv, r, 3 - r, {}));
    }
    g.end_rank();
  }
  const RankFold f = checked_fold(g, c);
  EXPECT_FALSE(f.consistent());
  EXPECT_FALSE(f.folds());
  EXPECT_THAT(f.inconsistent, HasSubstr("rank 0's send with rank 3 has no image"));
}

TEST(RankFold, AShadowsPeerThatItsRepresentativesDoesNotStandForFoldsNothing) {
  // Senders 0 and 3 alike (two sends each); receivers 1 and 4 alike, 2 and 5 alike (these
  // compute first). Rank 0 sends to 1 then 2, rank 3 to 5 then 4: both ends of 3 -> 5 are
  // shadows, but rank 5 is stood for by rank 2, not by rank 1, where rank 0's first goes.
  const Cluster c = h100s(1, 6);
  TaskGraph g;
  g.stream("compute");
  const std::vector<std::vector<int>> sends = {{1, 2}, {}, {}, {5, 4}, {}, {}};
  const std::vector<int> sender_of = {-1, 0, 0, -1, 3, 3};
  for (int r = 0; r < 6; ++r) {
    g.begin_rank(r);
    std::vector<TaskId> deps;
    for (int p : sends[r]) deps = {g.add(message(TaskKind::kSend, r, p, deps))};
    if (r % 3 == 2) deps = {g.add(testing::compute(r, 0, Duration::ms(1)))};
    if (sender_of[r] >= 0) g.add(message(TaskKind::kRecv, r, sender_of[r], deps));
    g.end_rank();
  }
  const RankFold f = checked_fold(g, c);
  EXPECT_THAT(f.representative, ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_FALSE(f.consistent());
  EXPECT_THAT(f.inconsistent, HasSubstr("rank 3's send number 0 of its peers and calls goes to "
                                        "rank 5, which its representative's (rank 0, to rank 1) "
                                        "does not stand for"));
}

TEST(RankFold, AShadowsTwoPeersOfOneRepresentativeFoldNothing) {
  // Senders 0, 2, 4 alike, receivers 1, 3, 5 alike: rank 0 sends twice to rank 1, rank 2
  // to ranks 3 and 5 (both stood for by rank 1). The image of 2 -> 5 (rank 0's second
  // send) meets rank 1's second recv, but 5's recv from 2 is its first.
  const Cluster c = h100s(1, 6);
  TaskGraph g;
  g.stream("compute");
  const std::vector<std::vector<int>> peers = {{1, 1}, {0, 0}, {3, 5}, {2, 4}, {3, 5}, {2, 4}};
  for (int r = 0; r < 6; ++r) {
    g.begin_rank(r);
    std::vector<TaskId> deps;
    for (int p : peers[r]) {
      const TaskKind kind = r % 2 == 0 ? TaskKind::kSend : TaskKind::kRecv;
      deps = {g.add(message(kind, r, p, deps))};
    }
    g.end_rank();
  }
  const RankFold f = checked_fold(g, c);
  EXPECT_THAT(f.representative, ElementsAre(0, 1, 0, 1, 0, 1));
  EXPECT_FALSE(f.consistent());
  EXPECT_THAT(f.inconsistent, HasSubstr("rank 2 exchanges messages with two ranks that rank 1"));
}

TEST(RankFold, ACallOnlyPartOfWhoseMembersFoldOntoItFoldsNothing) {
  // Ranks 0 and 1 alike, rank 2 alone (its own tasks): the call over {1, 2} is neither
  // simulated (rank 1's representative, rank 0, holds no task of it) nor a mirror (rank 2
  // stands for itself in it).
  const Cluster c = h100s(1, 3);
  TaskGraph g;
  call_over(g, {0}, "alone");
  call_over(g, {1, 2}, "pair");
  g.stream("compute");
  for (int r = 0; r < 2; ++r) {
    g.begin_rank(r);
    g.add(collective_task(r, static_cast<uint32_t>(r), {}));
    g.end_rank();
  }
  g.begin_rank(2);
  const TaskId first = g.add(testing::compute(2, 0, Duration::ms(1)));
  g.add(collective_task(2, 1, {first}));
  g.end_rank();
  const RankFold f = checked_fold(g, c);
  EXPECT_THAT(f.representative, ElementsAre(0, 0, 2));
  EXPECT_FALSE(f.consistent());
  EXPECT_THAT(f.inconsistent, HasSubstr("call 1 (\"pair\") has no single image"));
}

TEST(RankFold, AGraphThatDoesNotValidateIsReadWithinBounds) {
  // The sanitizer build runs this: every index is checked before it is read.
  const Cluster c = h100s(1, 4);
  TaskGraph calls;
  call_over(calls, {0, 1, 2, 9}, "dp grads");
  // Rank 3 holds a task of call 7, which the graph lacks.
  TaskGraph g = compute_then_calls({{0}, {0}, {0}, {7}}, calls);
  EXPECT_THAT(g.validate(c.num_ranks()), ::testing::Not(::testing::IsEmpty()));
  RankFold f = fold_ranks(g, c);
  EXPECT_FALSE(f.consistent());
  EXPECT_THAT(f.inconsistent, HasSubstr("rank 3 holds a task of a call the graph lacks"));
  // Sends to ranks the cluster lacks, from ranks alike.
  g = TaskGraph();
  g.stream("compute");
  for (int r = 0; r < 2; ++r) {
    g.begin_rank(r);
    g.add(message(TaskKind::kSend, r, 40 + r, {}));
    g.end_rank();
  }
  f = fold_ranks(g, c);
  EXPECT_FALSE(f.consistent());
  // Tasks of ranks the cluster lacks, as added.
  g = TaskGraph();
  g.stream("compute");
  g.add(message(TaskKind::kRecv, 11, 0, {}));
  g.add(message(TaskKind::kSend, 0, 11, {}));
  f = fold_ranks(g, c);
  EXPECT_FALSE(f.folds());
  EXPECT_EQ(f.classes, 4);
}

TEST(RankFold, DevicesOfAnotherKindOrSpeedRunApart) {
  ClusterSpec spec = one_region(node_group(1, 2, "H100"), fabric(FabricKind::kSingleSwitch));
  spec.regions[0].node_groups.push_back(node_group(1, 2, "A100-80GB"));
  const Cluster mixed = build_cluster(spec);
  TaskGraph g;
  call_over(g, {0, 1, 2, 3}, "dp grads");
  g = compute_then_calls({{0}, {0}, {0}, {0}}, std::move(g));
  RankFold f = checked_fold(g, mixed);
  EXPECT_TRUE(f.folds()) << f.inconsistent;
  EXPECT_THAT(f.representative, ElementsAre(0, 0, 2, 2));

  Cluster slower = h100s(1, 4);
  slower.devices[3].speed = 0.97;
  f = checked_fold(g, slower);
  EXPECT_THAT(f.representative, ElementsAre(0, 0, 0, 3));
  EXPECT_EQ(f.classes, 2);
}

TEST(RankFold, RanksAddedOutsideBracketsOrCrowdedStandAlone) {
  const Cluster c = h100s(1, 4);
  TaskGraph g;
  call_over(g, {0, 1, 2, 3}, "dp grads");
  const TaskGraph loose = compute_then_calls({{0}, {0}, {0}, {0}}, g, false);
  RankFold f = checked_fold(loose, c);
  EXPECT_TRUE(f.consistent());
  EXPECT_FALSE(f.folds());
  EXPECT_EQ(f.classes, 4);

  TaskGraph crowded = compute_then_calls({{0}, {0}, {0}, {0}}, g);
  crowded.set_crowding(0, Crowding{0.5F, 1});
  f = checked_fold(crowded, c);
  EXPECT_FALSE(f.folds());
  EXPECT_EQ(f.classes, 4);
  EXPECT_THAT(f.unclassed, HasSubstr("CPU kernels"));
}

}  // namespace
}  // namespace dtsim
