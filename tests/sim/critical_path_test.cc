// The critical path: from the task that ended last back through what each task waited for.
#include "sim/critical_path.h"

#include <gtest/gtest.h>

#include "sim/simulation.h"
#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using testing::compute;
using testing::two_h100;

std::vector<CriticalStep> path_of(const TaskGraph& g) {
  const Cluster c = two_h100();
  Simulation sim(c, {});
  TaskTimesRecorder t(g.num_tasks());
  sim.add_observer(&t);
  sim.run(g);
  return critical_path(g, t.times());
}

std::vector<TaskId> ids(const std::vector<CriticalStep>& path) {
  std::vector<TaskId> out;
  for (const auto& s : path) out.push_back(s.task);
  return out;
}

TEST(CriticalPath, FollowsTheStreamAndTheLongerDependency) {
  TaskGraph g;
  const uint16_t s0 = g.stream("compute"), s1 = g.stream("other");
  const TaskId a = g.add(compute(0, s0, Duration::ms(10)));
  const TaskId b = g.add(compute(0, s0, Duration::ms(5)));  // after a on its stream
  const TaskId x = g.add(compute(1, s1, Duration::ms(2)));  // short, off the path
  const TaskId y = g.add(compute(1, s0, Duration::ms(1), {b, x}));
  const auto path = path_of(g);
  EXPECT_EQ(ids(path), (std::vector<TaskId>{a, b, y}));
  EXPECT_EQ(path[0].link, CriticalLink::kFirst);
  EXPECT_EQ(path[1].link, CriticalLink::kStream);
  EXPECT_EQ(path[2].link, CriticalLink::kDependency);
}

TEST(CriticalPath, GoesThroughTheLastMemberOfACollective) {
  TaskGraph g;
  const uint16_t comp = g.stream("compute"), comm = g.stream("comm");
  const TaskId fast = g.add(compute(0, comp, Duration::ms(1)));
  const TaskId slow = g.add(compute(1, comp, Duration::ms(7)));
  CollectiveCall call{
      CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {0, 1}, MiB(64), {}, "ar"};
  const uint32_t id = g.add_collective(call);
  Task member;
  member.kind = TaskKind::kCollective;
  member.collective = id;
  member.stream = comm;
  member.name = "ar";
  member.rank = 0;
  member.deps = {fast};
  const TaskId m0 = g.add(member);
  member.rank = 1;
  member.deps = {slow};
  const TaskId m1 = g.add(member);
  const TaskId after = g.add(compute(0, comp, Duration::ms(1), {m0}));
  const auto path = path_of(g);
  // Rank 0's last task waited for the all-reduce, which waited for rank 1's 7 ms.
  EXPECT_EQ(ids(path), (std::vector<TaskId>{slow, m1, m0, after}));
  EXPECT_EQ(path[1].link, CriticalLink::kDependency);
  EXPECT_EQ(path[2].link, CriticalLink::kCollective);
}

// A 450 MB message from rank 0 to rank 1 (1 ms over NVLink), sent after `send_after`
// and received after `recv_after`; returns the send's and the receive's ids.
std::pair<TaskId, TaskId> message(TaskGraph& g, uint16_t stream, std::vector<TaskId> send_after,
                                  std::vector<TaskId> recv_after) {
  Task send;
  send.kind = TaskKind::kSend;
  send.rank = 0;
  send.stream = stream;
  send.peer = 1;
  send.bytes = Bytes(450'000'000);
  send.name = "send";
  send.deps = std::move(send_after);
  const TaskId s = g.add(send);
  Task recv = send;
  recv.kind = TaskKind::kRecv;
  recv.rank = 1;
  recv.peer = 0;
  recv.deps = std::move(recv_after);
  recv.name = "recv";
  return {s, g.add(recv)};
}

TEST(CriticalPath, AReceiveFollowsItsSend) {
  TaskGraph g;
  const uint16_t comp = g.stream("compute"), comm = g.stream("comm");
  const TaskId produce = g.add(compute(0, comp, Duration::ms(4)));
  const auto [s, r] = message(g, comm, {produce}, {});  // the receive is posted at once
  const TaskId consume = g.add(compute(1, comp, Duration::ms(1), {r}));
  const auto path = path_of(g);
  EXPECT_EQ(ids(path), (std::vector<TaskId>{produce, s, r, consume}));
  EXPECT_EQ(path[2].link, CriticalLink::kMessage);
}

TEST(CriticalPath, ALateReceiverKeepsThePathOnItsRank) {
  TaskGraph g;
  const uint16_t comp = g.stream("compute"), comm = g.stream("comm");
  const TaskId produce = g.add(compute(0, comp, Duration::ms(1)));
  const TaskId work = g.add(compute(1, comp, Duration::ms(10)));  // the receiver is busy
  const TaskId r = message(g, comm, {produce}, {work}).second;
  const TaskId consume = g.add(compute(1, comp, Duration::ms(1), {r}));
  const auto path = path_of(g);
  EXPECT_EQ(ids(path), (std::vector<TaskId>{work, r, consume}));
  EXPECT_EQ(path[1].link, CriticalLink::kDependency);
}

TEST(CriticalPath, EmptyWhenNothingRan) {
  TaskGraph g;
  g.add(compute(0, g.stream("compute"), Duration::ms(1)));
  EXPECT_TRUE(critical_path(g, TaskTimes(g.num_tasks())).empty());
}

}  // namespace
}  // namespace dtsim
