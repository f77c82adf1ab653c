// TaskGraph's ranks stored once: a rank bracketed by begin_rank/end_rank that is alike an
// earlier one but for its rank, peers and calls reads the earlier rank's records, and every
// view reads back exactly as the same tasks added without brackets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/task_graph.h"

namespace dtsim {
namespace {

using testing::ElementsAre;

// One rank of a pipeline stage: a forward pass, an alloc and its free, a send of the
// activations to the next stage, a gradient all-reduce with `call`.
std::vector<Task> stage_tasks(int rank, int peer, uint32_t call, Duration fwd) {
  std::vector<Task> tasks(5);
  tasks[0].name = "fwd mb0";
  tasks[0].duration = fwd;
  tasks[1].kind = TaskKind::kAlloc;
  tasks[1].name = "activations";
  tasks[1].bytes = Bytes(4096);
  tasks[1].buffer = 7;
  tasks[1].memory = MemoryCategory::kActivations;
  tasks[2].kind = TaskKind::kSend;
  tasks[2].name = "send act mb0";
  tasks[2].peer = peer;
  tasks[2].tag = 11;
  tasks[2].bytes = Bytes(1 << 20);
  tasks[2].transfer = PipelineTransfer{PipelineTensor::kActivations, 0, 0};
  tasks[3].kind = TaskKind::kCollective;
  tasks[3].name = "dp grads";
  tasks[3].collective = call;
  tasks[3].stream = 1;
  tasks[4] = tasks[1];
  tasks[4].kind = TaskKind::kFree;
  for (Task& t : tasks) t.rank = rank;
  return tasks;
}

// Adds the tasks with their dependencies (each on the one before, the all-reduce on the
// forward pass too) as ids in `g`.
void add_tasks(TaskGraph& g, std::vector<Task> tasks, bool bracket) {
  if (bracket) g.begin_rank(tasks.front().rank);
  std::vector<TaskId> ids;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0) tasks[i].deps = {ids.back()};
    if (tasks[i].kind == TaskKind::kCollective) tasks[i].deps.push_back(ids.front());
    ids.push_back(g.add(tasks[i]));
  }
  if (bracket) g.end_rank();
}

TaskGraph graph_with_streams() {
  TaskGraph g;
  g.stream("compute");
  g.stream("dp");
  return g;
}

// The same tasks in two graphs: each rank bracketed in `folded`, added one by one in `flat`.
struct TwoGraphs {
  explicit TwoGraphs(int calls) {
    for (int c = 0; c < calls; ++c) {
      folded.add_collective({});
      flat.add_collective({});
    }
  }
  void add_rank(const std::vector<Task>& tasks) {
    add_tasks(folded, tasks, true);
    add_tasks(flat, tasks, false);
  }
  void add(const Task& task) {
    folded.add(task);
    flat.add(task);
  }
  void set_duration(TaskId id, Duration d) {
    folded.set_duration(id, d);
    flat.set_duration(id, d);
  }
  TaskGraph folded = graph_with_streams();
  TaskGraph flat = graph_with_streams();
};

void expect_same_views(const TaskGraph& a, const TaskGraph& b) {
  ASSERT_EQ(a.num_tasks(), b.num_tasks());
  auto in_order = a.tasks().begin();
  for (TaskId id = 0; id < a.num_tasks(); ++id, ++in_order) {
    for (const TaskView& x : {a.task(id), static_cast<TaskView>(*in_order)}) {
      const TaskView y = b.task(id);
      EXPECT_EQ(x.name, y.name) << id;
      EXPECT_EQ(x.rank, y.rank) << id;
      EXPECT_EQ(x.peer, y.peer) << id;
      EXPECT_EQ(x.collective, y.collective) << id;
      EXPECT_EQ(x.kind, y.kind) << id;
      EXPECT_EQ(x.stream, y.stream) << id;
      EXPECT_EQ(x.tag, y.tag) << id;
      EXPECT_EQ(x.duration, y.duration) << id;
      EXPECT_EQ(x.bytes, y.bytes) << id;
      EXPECT_EQ(x.buffer, y.buffer) << id;
      EXPECT_EQ(x.memory, y.memory) << id;
      EXPECT_EQ(x.ops, y.ops) << id;
      EXPECT_EQ(x.memcpy_kind, y.memcpy_kind) << id;
      EXPECT_EQ(std::vector<TaskId>(x.deps.begin(), x.deps.end()),
                std::vector<TaskId>(y.deps.begin(), y.deps.end()))
          << id;
    }
    EXPECT_EQ(a.transfer(id), b.transfer(id)) << id;
  }
}

TEST(RanksStoredOnce, RanksAlikeButForPeersAndCallsShareTheFirstRanksRecords) {
  TwoGraphs g(2);
  const uint32_t even = 0, odd = 1;
  for (int r = 0; r < 4; ++r)
    g.add_rank(stage_tasks(r, (r + 1) % 4, r % 2 == 0 ? even : odd, Duration::ms(2)));
  const TaskGraph &folded = g.folded, &flat = g.flat;
  EXPECT_EQ(folded.num_tasks(), 20u);
  EXPECT_EQ(folded.num_records(), 5u);  // the first rank's
  EXPECT_EQ(flat.num_records(), 20u);
  expect_same_views(folded, flat);
  // Rank 3's tasks: ids 15..19, its own peer and call, dependencies among its own ids.
  EXPECT_EQ(folded.task(17).peer, 0);
  EXPECT_EQ(folded.task(18).collective, odd);
  EXPECT_THAT(folded.task(18).deps, ElementsAre(17u, 15u));
  EXPECT_EQ(folded.num_transfers(), 4u);
  const TaskGraphCounts c = folded.counts();
  EXPECT_EQ(c.tasks, 20);
  EXPECT_EQ(c.dependencies, 20);
  EXPECT_EQ(c.records, 5);
  EXPECT_EQ(c.stored_dependencies, 5);
  EXPECT_EQ(c.overrides, 8);  // a peer and a call per rank
  EXPECT_LT(TaskGraph::bytes_for(c), TaskGraph::bytes_for(flat.counts()));
}

TEST(RanksStoredOnce, RanksThatDifferKeepRecordsOfTheirOwn) {
  TwoGraphs g(1);
  const TaskGraph &folded = g.folded, &flat = g.flat;
  // Rank 1 runs a slower forward pass; rank 2 adds a task of rank 3 inside its bracket.
  std::vector<std::vector<Task>> ranks = {stage_tasks(0, 1, 0, Duration::ms(2)),
                                          stage_tasks(1, 2, 0, Duration::ms(3)),
                                          stage_tasks(2, 3, 0, Duration::ms(2))};
  ranks[2][4].rank = 3;
  for (const auto& tasks : ranks) g.add_rank(tasks);
  EXPECT_EQ(folded.num_records(), 15u);
  expect_same_views(folded, flat);
  // A rank alike rank 1 after them reads rank 1's records.
  g.add_rank(stage_tasks(4, 0, 0, Duration::ms(3)));
  EXPECT_EQ(folded.num_records(), 15u);
  expect_same_views(folded, flat);
}

TEST(RanksStoredOnce, ADurationSetOnOneRankChangesThatRankAlone) {
  TwoGraphs g(1);
  const TaskGraph &folded = g.folded, &flat = g.flat;
  for (int r = 0; r < 3; ++r) g.add_rank(stage_tasks(r, (r + 1) % 3, 0, Duration::ms(2)));
  g.set_duration(5, Duration::ms(9));          // rank 1's forward pass
  g.folded.set_duration(10, Duration::ms(2));  // rank 2's, as it is: nothing to change
  EXPECT_EQ(folded.task(0).duration, Duration::ms(2));
  EXPECT_EQ(folded.task(5).duration, Duration::ms(9));
  EXPECT_EQ(folded.task(10).duration, Duration::ms(2));
  EXPECT_EQ(folded.num_records(), 10u);  // rank 1 got a copy of its own
  expect_same_views(folded, flat);
  g.set_duration(5, Duration::ms(4));  // and changes it in place
  EXPECT_EQ(folded.num_records(), 10u);
  expect_same_views(folded, flat);
}

// Tasks added outside brackets between ranks, a peer copy, an empty bracket, and records a
// duration copied for the first rank (whose records the others read) and for the last,
// with more tasks added after the copies.
TEST(RanksStoredOnce, UnbracketedTasksPeerCopiesAndCopiesMadeOnTheWayReadBack) {
  TwoGraphs g(1);
  const TaskGraph &folded = g.folded, &flat = g.flat;
  const auto with_copy = [](int rank, int peer) {
    auto tasks = stage_tasks(rank, peer, 0, Duration::ms(2));
    Task copy;
    copy.kind = TaskKind::kMemcpy;
    copy.memcpy_kind = MemcpyKind::kPeer;
    copy.name = "peer copy";
    copy.rank = rank;
    copy.peer = peer;
    copy.bytes = Bytes(512);
    tasks.push_back(copy);
    return tasks;
  };
  Task loose;
  loose.name = "loose";
  loose.rank = 5;
  loose.deps = {2};  // on rank 0's send
  for (int r = 0; r < 4; ++r) {
    g.add_rank(with_copy(r, (r + 3) % 4));
    g.add(loose);
    g.folded.begin_rank(9);  // empty
    g.folded.end_rank();
  }
  EXPECT_EQ(folded.num_records(), 6u + 4u);
  EXPECT_EQ(folded.task(12).peer, 0);  // rank 1's peer copy
  expect_same_views(folded, flat);
  // As the graph stores them: each bracket reads the first rank's records with its own
  // peers and call, each loose task is a layout of rank -1, the empty brackets are gone.
  const auto overrides = [](const TaskGraph::RankLayout& l) {
    return std::vector<int32_t>(l.overrides.begin(), l.overrides.end());
  };
  std::vector<TaskGraph::RankLayout> layouts = folded.rank_layouts();
  ASSERT_EQ(layouts.size(), 8u);
  for (int r = 0; r < 4; ++r) {
    const TaskGraph::RankLayout &bracket = layouts[2 * r], &after = layouts[2 * r + 1];
    EXPECT_EQ(bracket.rank, r);
    EXPECT_EQ(bracket.first_id, TaskId(7 * r));
    EXPECT_EQ(bracket.size, 6u);
    EXPECT_EQ(bracket.first_record, 0u);
    EXPECT_THAT(overrides(bracket), ElementsAre((r + 3) % 4, 0, (r + 3) % 4)) << r;
    EXPECT_EQ(after.rank, -1);
    EXPECT_EQ(after.first_id, TaskId(7 * r + 6));
    EXPECT_EQ(after.size, 1u);
    EXPECT_TRUE(after.overrides.empty());
  }
  // Rank 0's and rank 3's forward passes.
  for (TaskId id : {TaskId{0}, TaskId{21}}) g.set_duration(id, Duration::ms(5));
  g.add(loose);
  g.add_rank(with_copy(6, 0));
  expect_same_views(folded, flat);
  // Ranks 0 and 3 read copies of their own; rank 6 the first rank's records.
  layouts = folded.rank_layouts();
  ASSERT_EQ(layouts.size(), 10u);
  EXPECT_NE(layouts[0].first_record, 0u);
  EXPECT_EQ(layouts[2].first_record, 0u);
  EXPECT_NE(layouts[6].first_record, 0u);
  EXPECT_NE(layouts[6].first_record, layouts[0].first_record);
  EXPECT_EQ(layouts[9].rank, 6);
  EXPECT_EQ(layouts[9].first_record, 0u);
  EXPECT_THAT(overrides(layouts[9]), ElementsAre(0, 0, 0));
  g.folded.begin_rank(7);
  // An open bracket is tasks as added until it closes.
  EXPECT_EQ(folded.rank_layouts().back().rank, -1);
  EXPECT_EQ(folded.rank_layouts().back().size, 0u);
  EXPECT_THROW(g.folded.set_duration(0, Duration::ms(1)), std::logic_error);
  g.folded.end_rank();
}

// Distances back read a dependency on a later task back as that task, so that validate
// still names it; and a bracket cannot be opened twice or closed unopened.
TEST(RanksStoredOnce, ValidateStillSeesADependencyOnALaterTask) {
  TaskGraph g = graph_with_streams();
  Task t;
  t.name = "early";
  t.deps = {3};
  g.begin_rank(0);
  g.add(t);
  EXPECT_THROW(g.begin_rank(1), std::logic_error);
  g.end_rank();
  EXPECT_THROW(g.end_rank(), std::logic_error);
  EXPECT_THAT(g.task(0).deps, ElementsAre(3u));
  const auto errors = g.validate(1);
  ASSERT_FALSE(errors.empty());
  EXPECT_THAT(errors.front(),
              testing::HasSubstr("depends on task 3, which is not an earlier task"));
}

}  // namespace
}  // namespace dtsim
