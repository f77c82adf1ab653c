// Runs one rank's tasks for real, one thread per stream, as the simulator runs them: a
// stream runs its tasks one at a time in graph order, each once its dependencies are done,
// so that communication on one stream overlaps computation on another.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <vector>

#include "executor/rank_plan.h"
#include "executor/task_work.h"
#include "sim/task_graph.h"

namespace dtsim::executor {

// A task's start and end on this process's steady clock, in nanoseconds.
struct TaskSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct StepTimes {
  int64_t start_ns = 0;         // when the gate opened (steady clock)
  std::vector<TaskSpan> tasks;  // per local index of the plan
};

int64_t steady_now_ns();

class RankExecutor {
 public:
  // `on_failure` runs on the failing task's thread as soon as it throws, before the other
  // streams stop: a stream blocked in a call that waits for a peer never returns by itself,
  // so a real rank aborts the whole job there (MPI_Abort) rather than wait for it.
  RankExecutor(const TaskGraph& graph, const RankPlan& plan, TaskWork& work,
               TaskListener* listener = nullptr,
               std::function<void(TaskId, const std::exception&)> on_failure = {})
      : graph_(graph),
        plan_(plan),
        work_(work),
        listener_(listener),
        on_failure_(std::move(on_failure)) {}

  // Runs every task of the plan once. The stream threads start first and wait; `gate` (an
  // MPI barrier, say) runs on the calling thread, and the step starts when it returns, so
  // that starting threads is not timed. Rethrows the first task's exception after every
  // thread has stopped (tasks not yet started are not started).
  StepTimes run_step(const std::function<void()>& gate = {});

 private:
  const TaskGraph& graph_;
  const RankPlan& plan_;
  TaskWork& work_;
  TaskListener* listener_;
  std::function<void(TaskId, const std::exception&)> on_failure_;
};

}  // namespace dtsim::executor
