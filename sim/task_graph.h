// The TaskGraph: per-rank tasks (compute, collective, send/recv, memcpy, alloc/free) with
// dependencies and stream assignment. Both the simulator and the real executor run it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/collectives/collective_plan.h"
#include "sim/device.h"
#include "sim/observer.h"
#include "sim/units.h"

namespace dtsim {

using TaskId = uint32_t;

enum class MemcpyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice, kPeer };
std::string_view memcpy_kind_name(MemcpyKind k);
std::optional<MemcpyKind> memcpy_kind_from_name(std::string_view name);

// One collective call; every member rank holds one task that refers to it. The call
// starts when every member's task is ready (as NCCL's kernels rendezvous).
struct CollectiveCall {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  std::vector<int> members;
  Bytes bytes;
  CollectiveOptions options;
  std::string label;
  // Priced by the alpha-beta estimate on the group's measured links instead of flow by
  // flow. Right for calls whose links nothing else loads at the time (tensor-parallel
  // collectives inside an NVSwitch node), and far cheaper to simulate.
  bool analytical = false;
};

struct Task {
  TaskKind kind = TaskKind::kCompute;
  int rank = 0;
  uint16_t stream = 0;  // index into TaskGraph::streams()
  std::string name;
  std::vector<TaskId> deps;
  // compute: a fixed duration, or FLOPs at the device's peak for `dtype`.
  Duration duration;
  std::optional<Flops> flops;
  DType dtype = DType::kFp32;
  // collective
  uint32_t collective = 0;
  // send, recv (peer = the other rank; matched by (sender, receiver, tag) in order),
  // memcpy (peer for kPeer), alloc, free
  int peer = -1;
  uint32_t tag = 0;
  Bytes bytes;
  MemcpyKind memcpy_kind = MemcpyKind::kHostToDevice;
};

// Tasks on one (rank, stream) run one at a time in the order they were added, like CUDA
// streams; tasks on different streams run concurrently once their dependencies are done.
class TaskGraph {
 public:
  // Returns the stream's index, adding it if new.
  uint16_t stream(std::string_view name);
  const std::vector<std::string>& streams() const { return streams_; }

  TaskId add(Task task);
  uint32_t add_collective(CollectiveCall call);
  // Adds the call and one task per member on `stream`, named after its label, with no
  // dependencies (stream order sequences calls on one stream). Returns the call's id.
  uint32_t add_collective_with_tasks(CollectiveCall call, uint16_t stream);

  const std::vector<Task>& tasks() const { return tasks_; }
  const Task& task(TaskId id) const { return tasks_[id]; }
  const std::vector<CollectiveCall>& collectives() const { return collectives_; }

  // Structural problems (dangling or forward dependencies, a collective whose member set
  // differs from the ranks holding its tasks, unmatched sends, ranks out of range), one
  // sentence each naming the task. Empty when the graph can run.
  std::vector<std::string> validate(int num_ranks) const;

 private:
  std::vector<std::string> streams_;
  std::vector<Task> tasks_;
  std::vector<CollectiveCall> collectives_;
};

}  // namespace dtsim
