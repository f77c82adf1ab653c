// The Communicator over MPI (Open MPI on CPUs): one communicator per collective group and
// stream, so that calls on one stream keep their order and calls on two streams may run at
// once (MPI_THREAD_MULTIPLE), and pipeline messages matched by (source, tag) as the
// simulator matches them by (sender, receiver, tag): MPI in the order they are posted,
// the simulator in the graph's order (docs/real-execution.md, "Messages").
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "executor/clock_offset.h"
#include "executor/communicator.h"
#include "executor/doorbells.h"
#include "executor/rank_plan.h"
#include "sim/task_graph.h"

namespace dtsim::executor {

class MpiCommunicator final : public Communicator {
 public:
  // Collective over `world` (every rank builds the same groups in the same order). A stream
  // waits for its peers on `bells` (doorbells.h) and enters a blocking call, which spins
  // only while it moves data, once they are there. Throws std::invalid_argument for a call
  // MPI cannot run as given (an fp8 reduction, a message of more than 2^31 - 1 elements)
  // naming the call.
  MpiCommunicator(const TaskGraph& graph, const RankPlan& plan, MPI_Comm world, Doorbells& bells);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  void collective(uint32_t call, const TaskView& task) override;
  void send(TaskId id, const TaskView& task) override;
  void recv(TaskId id, const TaskView& task) override;

 private:
  struct Group {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<std::byte> in;  // sized for the group's largest call
    std::vector<std::byte> out;
  };
  const TaskGraph& graph_;
  int rank_;
  Doorbells& bells_;
  MPI_Comm p2p_ = MPI_COMM_NULL;
  int tag_bound_ = 32767;
  std::map<std::pair<std::vector<int>, uint16_t>, Group> groups_;  // by (members, stream)
  std::vector<Group*> group_of_call_;  // by call id; null for calls this rank is not in
  std::map<uint16_t, std::pair<std::vector<std::byte>, std::vector<std::byte>>> p2p_buffers_;
};

// This rank's clock against rank 0's over `world`, from `rounds` ping-pongs per rank (rank 0
// answers each rank in turn). Collective over `world`; rank 0 gets offset 0.
ClockOffset measure_clock_offset(MPI_Comm world, int rounds);

}  // namespace dtsim::executor
