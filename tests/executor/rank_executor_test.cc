// RankExecutor: streams run their tasks in graph order one at a time, a task starts only
// once its dependencies have ended, two streams run at once, the gate opens the step, and
// a failing task stops the step without starting what waits for it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "executor/rank_executor.h"
#include "tests/executor/graph_builder.h"

namespace dtsim::executor {
namespace {

using testing::add_compute;

// Records the order tasks ran in; some tasks wait for another to have started (a latch
// that proves two streams run at once without timing anything), some throw.
class RecordingWork final : public TaskWork {
 public:
  void run(TaskId id, const TaskView&) override {
    {
      std::lock_guard lock(mu_);
      order_.push_back(id);
      started_.insert(id);
      changed_.notify_all();
    }
    if (auto it = waits_for_.find(id); it != waits_for_.end()) {
      std::unique_lock lock(mu_);
      const bool met = changed_.wait_for(lock, std::chrono::seconds(20),
                                         [&] { return started_.contains(it->second); });
      if (!met) throw std::runtime_error("the other stream never started its task");
    }
    if (throws_.contains(id)) throw std::runtime_error("task failed on purpose");
    // Long enough that a task released too early would overlap its dependency's span.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::map<TaskId, TaskId> waits_for_;
  std::set<TaskId> throws_;
  std::vector<TaskId> order() {
    std::lock_guard lock(mu_);
    return order_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<TaskId> order_;
  std::set<TaskId> started_;
};

class CountingListener final : public TaskListener {
 public:
  void started(TaskId) override { ++started_; }
  void finished(TaskId) override { ++finished_; }
  std::atomic<int> started_{0};
  std::atomic<int> finished_{0};
};

TEST(RankExecutor, StreamsKeepGraphOrderAndTasksWaitForTheirDependencies) {
  TaskGraph g;
  const TaskId f0 = add_compute(g, 0, "compute", "fwd 0");
  const TaskId f1 = add_compute(g, 0, "compute", "fwd 1");
  const TaskId ar = add_compute(g, 0, "comm", "reduce", {f0});
  const TaskId f2 = add_compute(g, 0, "compute", "fwd 2");
  const TaskId opt = add_compute(g, 0, "compute", "optimizer", {ar});
  const RankPlan plan = plan_rank(g, 0);
  RecordingWork work;
  CountingListener listener;
  RankExecutor ex(g, plan, work, &listener);
  const StepTimes t = ex.run_step();
  ASSERT_EQ(t.tasks.size(), 5u);
  auto span = [&](TaskId id) { return t.tasks[id]; };  // rank 0 holds every task: local = id
  for (TaskId id = 0; id < 5; ++id) {
    EXPECT_LE(span(id).start_ns, span(id).end_ns);
    EXPECT_GE(span(id).start_ns, t.start_ns);
  }
  // One stream runs one task at a time, in graph order.
  EXPECT_LE(span(f0).end_ns, span(f1).start_ns);
  EXPECT_LE(span(f1).end_ns, span(f2).start_ns);
  EXPECT_LE(span(f2).end_ns, span(opt).start_ns);
  // Dependencies across streams.
  EXPECT_LE(span(f0).end_ns, span(ar).start_ns);
  EXPECT_LE(span(ar).end_ns, span(opt).start_ns);
  EXPECT_EQ(listener.started_, 5);
  EXPECT_EQ(listener.finished_, 5);
}

TEST(RankExecutor, TwoStreamsRunAtOnce) {
  TaskGraph g;
  const TaskId a = add_compute(g, 0, "compute", "a");
  const TaskId b = add_compute(g, 0, "comm", "b");
  const RankPlan plan = plan_rank(g, 0);
  RecordingWork work;
  // Each waits until the other has started: only concurrent streams can finish this step.
  work.waits_for_ = {{a, b}, {b, a}};
  RankExecutor ex(g, plan, work);
  EXPECT_NO_THROW(ex.run_step());
}

TEST(RankExecutor, NoTaskStartsBeforeTheGateOpens) {
  TaskGraph g;
  add_compute(g, 0, "compute", "a");
  add_compute(g, 0, "comm", "b");
  const RankPlan plan = plan_rank(g, 0);
  RecordingWork work;
  RankExecutor ex(g, plan, work);
  bool ran_before_gate = false;
  const StepTimes t = ex.run_step([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ran_before_gate = !work.order().empty();
  });
  EXPECT_FALSE(ran_before_gate);
  for (const TaskSpan& s : t.tasks) EXPECT_GE(s.start_ns, t.start_ns);
}

TEST(RankExecutor, AFailingTaskStopsTheStepAndWhatWaitsForItNeverStarts) {
  TaskGraph g;
  const TaskId a = add_compute(g, 0, "compute", "fails");
  const TaskId after = add_compute(g, 0, "compute", "after it on its stream");
  const TaskId dependent = add_compute(g, 0, "comm", "waits for it", {a});
  const RankPlan plan = plan_rank(g, 0);
  RecordingWork work;
  work.throws_ = {a};
  RankExecutor ex(g, plan, work);
  EXPECT_THROW(ex.run_step(), std::runtime_error);
  const auto order = work.order();
  EXPECT_EQ(std::count(order.begin(), order.end(), after), 0);
  EXPECT_EQ(std::count(order.begin(), order.end(), dependent), 0);
  // The executor is reusable: the next step runs again from the start.
  work.throws_.clear();
  EXPECT_NO_THROW(ex.run_step());
}

TEST(RankExecutor, TheFailureHookSeesTheFailingTaskBeforeTheStepEnds) {
  TaskGraph g;
  add_compute(g, 0, "compute", "ok");
  const TaskId bad = add_compute(g, 0, "compute", "fails");
  const RankPlan plan = plan_rank(g, 0);
  RecordingWork work;
  work.throws_ = {bad};
  std::vector<TaskId> seen;
  std::string message;
  RankExecutor ex(g, plan, work, nullptr, [&](TaskId id, const std::exception& e) {
    seen.push_back(id);
    message = e.what();
  });
  EXPECT_THROW(ex.run_step(), std::runtime_error);
  EXPECT_EQ(seen, (std::vector<TaskId>{bad}));
  EXPECT_EQ(message, "task failed on purpose");
}

TEST(RankExecutor, AFailingGateStartsNoTask) {
  TaskGraph g;
  add_compute(g, 0, "compute", "a");
  const RankPlan plan = plan_rank(g, 0);
  RecordingWork work;
  RankExecutor ex(g, plan, work);
  EXPECT_THROW(ex.run_step([] { throw std::runtime_error("barrier failed"); }), std::runtime_error);
  EXPECT_TRUE(work.order().empty());
}

}  // namespace
}  // namespace dtsim::executor
