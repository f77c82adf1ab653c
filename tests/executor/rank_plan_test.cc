// plan_rank: a rank's tasks queued per stream in graph order, its in-rank dependencies
// counted, and a dependency on another rank's task refused.
#include <gtest/gtest.h>

#include "executor/rank_plan.h"
#include "tests/executor/graph_builder.h"

namespace dtsim::executor {
namespace {

using testing::add_compute;

TEST(RankPlan, QueuesEachStreamInGraphOrderAndCountsDependencies) {
  TaskGraph g;
  const TaskId a = add_compute(g, 0, "compute", "a");    // local 0
  add_compute(g, 1, "compute", "other rank");            // not rank 0's
  const TaskId b = add_compute(g, 0, "comm", "b", {a});  // local 1
  add_compute(g, 0, "compute", "c", {a, b});             // local 2
  const RankPlan p = plan_rank(g, 0);
  EXPECT_EQ(p.tasks, (std::vector<TaskId>{0, 2, 3}));
  ASSERT_EQ(p.queues.size(), 2u);
  EXPECT_EQ(g.streams()[p.queue_stream[0]], "compute");
  EXPECT_EQ(p.queues[0], (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(p.queues[1], (std::vector<uint32_t>{1}));
  EXPECT_EQ(p.deps, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(p.dependents[0], (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p.dependents[1], (std::vector<uint32_t>{2}));
  EXPECT_TRUE(p.dependents[2].empty());
  EXPECT_EQ(plan_rank(g, 1).tasks, (std::vector<TaskId>{1}));
  EXPECT_TRUE(plan_rank(g, 5).tasks.empty());
}

TEST(RankPlan, RefusesADependencyOnAnotherRanksTask) {
  TaskGraph g;
  const TaskId a = add_compute(g, 1, "compute", "theirs");
  add_compute(g, 0, "compute", "mine", {a});
  try {
    plan_rank(g, 0);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"mine\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("of rank 1"), std::string::npos) << e.what();
  }
}

TEST(RankPlan, GraphRanksCountsTasksAndCollectiveMembers) {
  TaskGraph g;
  add_compute(g, 0, "compute", "a");
  EXPECT_EQ(graph_ranks(g), 1);
  g.add_collective(CollectiveCall{
      CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {0, 3}, MiB(1), {}, "c"});
  EXPECT_EQ(graph_ranks(g), 4);
}

}  // namespace
}  // namespace dtsim::executor
