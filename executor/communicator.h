// The messages of a rank's tasks: its collective calls and pipeline sends and recvs, run by
// a communication library (MPI on CPUs). Each call blocks its stream's thread until done.
#pragma once

#include "sim/task_graph.h"

namespace dtsim::executor {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual void collective(uint32_t call, const TaskView& task) = 0;
  virtual void send(TaskId id, const TaskView& task) = 0;
  virtual void recv(TaskId id, const TaskView& task) = 0;
};

}  // namespace dtsim::executor
