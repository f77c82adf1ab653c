// TaskGraph storage: what is added reads back unchanged from the compact records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/task_graph.h"

namespace dtsim {
namespace {

using testing::ElementsAre;

TEST(TaskGraphStorage, ReadsBackWhatWasAdded) {
  TaskGraph g;
  const uint16_t s = g.stream("compute");
  Task a;
  a.name = "fwd mb0 with a name longer than any small-string buffer";
  a.rank = 3;
  a.stream = s;
  a.flops = Flops(2e12);
  a.dtype = DType::kBf16;
  const TaskId ia = g.add(a);
  Task b;
  b.kind = TaskKind::kSend;
  b.name = "send";
  b.rank = 3;
  b.peer = 4;
  b.tag = 17;
  b.bytes = Bytes(1 << 20);
  b.duration = Duration::us(3);
  b.deps = {ia};
  const TaskId ib = g.add(b);
  Task c;
  c.kind = TaskKind::kMemcpy;
  c.memcpy_kind = MemcpyKind::kPeer;
  c.flops = Flops(0);  // zero FLOPs is not "no FLOPs"
  c.deps = {ia, ib};
  const TaskId ic = g.add(c);

  ASSERT_EQ(g.num_tasks(), 3u);
  const TaskView va = g.task(ia);
  EXPECT_EQ(va.name, a.name);
  EXPECT_EQ(va.rank, 3);
  EXPECT_EQ(va.stream, s);
  ASSERT_TRUE(va.flops.has_value());
  EXPECT_EQ(*va.flops, Flops(2e12));
  EXPECT_EQ(va.dtype, DType::kBf16);
  EXPECT_TRUE(va.deps.empty());
  const TaskView vb = g.task(ib);
  EXPECT_EQ(vb.kind, TaskKind::kSend);
  EXPECT_EQ(vb.name, "send");
  EXPECT_EQ(vb.peer, 4);
  EXPECT_EQ(vb.tag, 17u);
  EXPECT_EQ(vb.bytes, Bytes(1 << 20));
  EXPECT_EQ(vb.duration, Duration::us(3));
  EXPECT_FALSE(vb.flops.has_value());
  EXPECT_THAT(vb.deps, ElementsAre(ia));
  const TaskView vc = g.task(ic);
  EXPECT_EQ(vc.memcpy_kind, MemcpyKind::kPeer);
  ASSERT_TRUE(vc.flops.has_value());
  EXPECT_EQ(*vc.flops, Flops(0));
  EXPECT_THAT(vc.deps, ElementsAre(ia, ib));
  // Iteration visits the same views in id order.
  size_t i = 0;
  for (const TaskView t : g.tasks()) EXPECT_EQ(t.name, g.task(static_cast<TaskId>(i++)).name);
  EXPECT_EQ(i, 3u);
}

TEST(TaskGraphStorage, CollectiveMembersShareOneName) {
  TaskGraph g;
  g.add_collective_with_tasks(
      CollectiveCall{CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {0, 1, 2, 3},
                     Bytes(1 << 20), {}, "dp all-reduce bucket 0"},
      g.stream("comm"));
  ASSERT_EQ(g.num_tasks(), 4u);
  for (TaskId id = 0; id < 4; ++id) {
    EXPECT_EQ(g.task(id).name, "dp all-reduce bucket 0");
    EXPECT_EQ(g.task(id).rank, static_cast<int>(id));
    // One copy of the characters, viewed four times.
    EXPECT_EQ(g.task(id).name.data(), g.task(0).name.data());
  }
}

TEST(TaskGraphStorage, RefusesNegativeFlops) {
  TaskGraph g;
  Task t;
  t.name = "bad";
  t.flops = Flops(-1);
  EXPECT_THROW(g.add(t), std::invalid_argument);
  EXPECT_EQ(g.num_tasks(), 0u);
}

// Reserving for the rest of the graph keeps what is there and where it is: views taken
// before more tasks are added stay valid as long as the reservation holds.
TEST(TaskGraphStorage, ReserveLikeFirstKeepsTasksInPlace) {
  TaskGraph g;
  Task t;
  t.name = "first";
  t.deps = {};
  g.add(t);
  t.name = "second";
  t.deps = {0};
  g.add(t);
  g.reserve_like_first(100);
  const char* first_name = g.task(0).name.data();
  const TaskId* second_deps = g.task(1).deps.data();
  for (int i = 0; i < 98; ++i) {
    t.name = "more";
    t.deps = {1};
    g.add(t);
  }
  EXPECT_EQ(g.num_tasks(), 100u);
  EXPECT_EQ(g.task(0).name, "first");
  EXPECT_EQ(g.task(1).deps.size(), 1u);
  EXPECT_EQ(g.task(99).deps[0], 1u);
  // 98 more tasks (4 characters and one dependency each) fit in 100 times the first two's
  // 2 tasks, 11 characters and 1 dependency.
  EXPECT_EQ(g.task(0).name.data(), first_name);
  EXPECT_EQ(g.task(1).deps.data(), second_deps);
}

}  // namespace
}  // namespace dtsim
