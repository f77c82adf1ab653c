// What running one task means on a backend: the scheduler (rank_executor.h) calls it on the
// thread of the task's stream once the task's dependencies are done.
#pragma once

#include "sim/task_graph.h"

namespace dtsim::executor {

class TaskWork {
 public:
  virtual ~TaskWork() = default;
  // Runs the task to completion; throws to fail the step (the message names what failed).
  virtual void run(TaskId id, const TaskView& task) = 0;
};

// Sees each task start and end (the progress board, so that a hung rank can say where).
class TaskListener {
 public:
  virtual ~TaskListener() = default;
  virtual void started(TaskId id) = 0;
  virtual void finished(TaskId id) = 0;
};

}  // namespace dtsim::executor
