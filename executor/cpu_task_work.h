// Running a rank's tasks on the CPU: each compute task's ops through kernels/ (OpenBLAS and
// our CPU kernels) on the tensors they bind (the rank's model state, the task's
// micro-batch's activations) and scratch of their own, allocations and frees by buffer id,
// host copies, and messages through a Communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "executor/communicator.h"
#include "executor/rank_plan.h"
#include "executor/task_work.h"
#include "executor/tensor_store.h"
#include "kernels/kernel.h"
#include "sim/task_graph.h"

namespace dtsim::executor {

class CpuTaskWork final : public TaskWork {
 public:
  // Prepares every buffer the rank's tasks use, so that no step times an allocation of its
  // operands: the tensors the ops bind (TensorStore: one op's result is the next op's
  // input, a weight is read forward and backward and updated by the optimizer, each
  // micro-batch has its activations), and per op of each op list its unbound operands
  // (scratch, reused by every micro-batch as a framework reuses its allocations). Throws
  // kernels::UnsupportedOp naming the task and the op for an op the CPU backend cannot run,
  // and std::invalid_argument for a task the CPU cannot (a copy to or from another rank's
  // device) or a binding TensorStore refuses.
  CpuTaskWork(const TaskGraph& graph, const RankPlan& plan, Communicator& comm);
  ~CpuTaskWork() override;

  void run(TaskId id, const TaskView& task) override;
  // Runs `enter` before and `leave` after every compute task's kernels, on the thread that
  // runs them: a slower device's CPU quota binds its kernels only (runner/cpu_quota.h).
  void bracket_kernels(std::function<void()> enter, std::function<void()> leave) {
    enter_ = std::move(enter);
    leave_ = std::move(leave);
  }

  // Bytes of the ops' scratch operands and of the tensors they bind (prepared once), and
  // the most bytes the graph's own allocations held at once so far.
  int64_t operand_bytes() const { return operand_bytes_; }
  const TensorStore& tensors() const { return tensors_; }
  int64_t peak_allocated_bytes() const;
  // The last step's op durations (ns), per local index of the plan: one per op of a compute
  // task's list, in order; empty for the other tasks.
  const std::vector<std::vector<int64_t>>& op_times() const { return op_ns_; }

 private:
  struct Block {
    std::byte* data = nullptr;
    int64_t bytes = 0;
  };
  void compute(TaskId id, const TaskView& task);
  void run_kernels(TaskId id, const TaskView& task);
  std::function<void()> enter_, leave_;
  void allocate(const TaskView& task);
  void release(const TaskView& task);
  void copy(const TaskView& task);

  const TaskGraph& graph_;
  Communicator& comm_;
  TensorStore tensors_;
  // Per op of each op list: its operands bound to tensors, where they lie.
  struct BoundOperand {
    size_t operand = 0;  // index into the kernel's operands
    TensorStore::Location at;
    int64_t offset_bytes = 0;
  };
  std::unordered_map<OpListId, std::vector<std::vector<BoundOperand>>> bound_;
  std::unordered_map<TaskId, uint32_t> local_;  // task id -> local index of the plan
  // Written by each compute task into its own slot only, so the streams need no lock.
  std::vector<std::vector<int64_t>> op_ns_;
  // (op list, stream) -> one buffer set per op, in list order: tasks of one list on two
  // streams may run at once and must not write the same buffers.
  static uint64_t operand_key(const TaskView& t) { return (uint64_t{t.ops} << 16) | t.stream; }
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<kernels::OperandBuffers>>> operands_;
  int64_t operand_bytes_ = 0;
  // memcpy tasks: a source and a destination per (size, stream), reused.
  static uint64_t copy_key(const TaskView& t) {
    return (static_cast<uint64_t>(t.bytes.count()) << 16) | t.stream;
  }
  std::unordered_map<uint64_t, std::pair<std::vector<std::byte>, std::vector<std::byte>>> copies_;

  // Allocations: freed blocks are kept by size and handed out again, as a framework's
  // caching allocator does, so that only the first (warm-up) step touches fresh pages.
  mutable std::mutex memory_mu_;
  std::unordered_multimap<uint64_t, Block> live_;        // by buffer id (or size, for id 0)
  std::unordered_multimap<int64_t, std::byte*> cached_;  // by size
  int64_t allocated_bytes_ = 0;
  int64_t peak_allocated_bytes_ = 0;
};

}  // namespace dtsim::executor
