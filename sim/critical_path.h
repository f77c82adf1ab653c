// The critical path of a run: the chain of tasks that set its end. From the task that
// finished last, each step goes back to what that task waited for last: one of its
// dependencies, the task before it on its stream (a stream runs its tasks in order), for
// a collective the member that reached the rendezvous last, for a send or a receive the one
// of the pair posted last. The
// gaps between steps are time no task on the chain accounts for (a message in flight
// before its receive is posted, a collective's own cost) and are reported as such.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/observer.h"
#include "sim/task_graph.h"
#include "sim/units.h"

namespace dtsim {

// When each task ran, indexed by TaskId; a task that never ran has ran = false.
struct TaskTimes {
  std::vector<Time> start;
  std::vector<Time> end;
  std::vector<bool> ran;
  explicit TaskTimes(size_t tasks) : start(tasks), end(tasks), ran(tasks, false) {}
  void record(TaskId task, Time s, Time e) {
    start[task] = s;
    end[task] = e;
    ran[task] = true;
  }
};

// Records every task's times as the run reports them (TaskTimes for critical_path).
class TaskTimesRecorder : public SimObserver {
 public:
  explicit TaskTimesRecorder(size_t tasks) : times_(tasks) {}
  void on_task(const TaskRecord& r) override { times_.record(r.task, r.start, r.end); }
  const TaskTimes& times() const { return times_; }

 private:
  TaskTimes times_;
};

// Why a step of the path follows the one before it.
enum class CriticalLink : uint8_t {
  kFirst,       // the path's first task: nothing it waited for
  kDependency,  // an explicit dependency
  kStream,      // the previous task on the same rank and stream
  kCollective,  // the member of the same collective call that arrived last
  kMessage,     // the other side of this send or receive, posted later
};
std::string_view critical_link_name(CriticalLink l);

struct CriticalStep {
  TaskId task = 0;
  CriticalLink link = CriticalLink::kFirst;  // how this task follows the step before it
};

// The path in time order (first task first); empty when no task ran. O(tasks + deps).
// `graph` is one a run accepted (TaskGraph::validate found nothing): its ranks and streams
// in range, every send paired.
std::vector<CriticalStep> critical_path(const TaskGraph& graph, const TaskTimes& times);

}  // namespace dtsim
