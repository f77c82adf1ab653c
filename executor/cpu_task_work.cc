// CpuTaskWork: kernels on prepared operands, a caching allocator, host copies.
#include "executor/cpu_task_work.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "executor/rank_executor.h"

namespace dtsim::executor {

namespace {

std::string describe(TaskId id, const TaskView& t) {
  return "task " + std::to_string(id) + " (\"" + std::string(t.name) + "\", rank " +
         std::to_string(t.rank) + ")";
}

// Buffers a file named no id for are told apart by size (a free undoes the latest
// allocation of its size).
uint64_t block_key(const TaskView& t) {
  return t.buffer != 0 ? t.buffer : (uint64_t{1} << 32) | static_cast<uint64_t>(t.bytes.count());
}

}  // namespace

CpuTaskWork::CpuTaskWork(const TaskGraph& graph, const RankPlan& plan, Communicator& comm)
    : graph_(graph), comm_(comm), tensors_(graph, plan), op_ns_(plan.tasks.size()) {
  operand_bytes_ = tensors_.bytes();
  for (uint32_t local = 0; local < plan.tasks.size(); ++local) {
    const TaskId id = plan.tasks[local];
    const TaskView t = graph.task(id);
    local_.emplace(id, local);
    if (t.kind == TaskKind::kCompute && t.ops != kNoOps)
      op_ns_[local].resize(graph.op_list(t.ops).size());
    if (t.kind == TaskKind::kCompute && t.ops != kNoOps && !operands_.contains(operand_key(t))) {
      const auto ops = graph.op_list(t.ops);
      const auto bindings = graph.op_operands(t.ops);
      auto [bound, fresh] = bound_.try_emplace(t.ops);
      std::vector<std::unique_ptr<kernels::OperandBuffers>> sets;
      for (size_t i = 0; i < ops.size(); ++i) {
        const OpSignature& op = ops[i];
        if (const std::string why = kernels::cpu_unsupported_reason(op); !why.empty()) {
          throw kernels::UnsupportedOp(describe(id, t) + ", op \"" + op.name + "\": " + why);
        }
        // Bound operands point at their tensors (of this task's micro-batch for now; each
        // run points them at its own), the others get scratch of their own.
        const std::vector<kernels::OperandSpec> specs = kernels::cpu_operands(op);
        std::vector<std::byte*> external(specs.size(), nullptr);
        std::vector<BoundOperand> placed;
        for (const OperandBinding& b : bindings[i]) {
          size_t k = 0;
          while (specs[k].name != b.operand) ++k;  // TensorStore checked that it exists
          const TensorStore::Location at = tensors_.locate(b.tensor);
          const int64_t offset = b.offset * kernels::element_bytes(specs[k].type);
          placed.push_back({k, at, offset});
          external[k] = at.in(tensors_.frame(t.tag)) + offset;
        }
        if (fresh) bound->second.push_back(std::move(placed));
        sets.push_back(std::make_unique<kernels::OperandBuffers>(op, external));
        operand_bytes_ += sets.back()->total_bytes();
      }
      operands_.emplace(operand_key(t), std::move(sets));
    }
    if (t.kind == TaskKind::kMemcpy) {
      if (t.memcpy_kind == MemcpyKind::kPeer) {
        throw std::invalid_argument(describe(id, t) +
                                    ": a peer copy reads another rank's device memory, which "
                                    "CPU ranks do not share; send it as a message");
      }
      auto& [from, to] = copies_[copy_key(t)];
      from.assign(static_cast<size_t>(t.bytes.count()), std::byte{1});
      to.assign(static_cast<size_t>(t.bytes.count()), std::byte{0});
    }
  }
}

CpuTaskWork::~CpuTaskWork() {
  for (auto& [key, block] : live_) std::free(block.data);
  for (auto& [bytes, data] : cached_) std::free(data);
}

int64_t CpuTaskWork::peak_allocated_bytes() const {
  std::lock_guard lock(memory_mu_);
  return peak_allocated_bytes_;
}

void CpuTaskWork::run(TaskId id, const TaskView& task) {
  switch (task.kind) {
    case TaskKind::kCompute:
      compute(id, task);
      return;
    case TaskKind::kCollective:
      comm_.collective(task.collective, task);
      return;
    case TaskKind::kSend:
      comm_.send(id, task);
      return;
    case TaskKind::kRecv:
      comm_.recv(id, task);
      return;
    case TaskKind::kMemcpy:
      copy(task);
      return;
    case TaskKind::kAlloc:
      allocate(task);
      return;
    case TaskKind::kFree:
      release(task);
      return;
  }
}

void CpuTaskWork::compute(TaskId id, const TaskView& task) {
  if (!enter_) {
    run_kernels(id, task);
    return;
  }
  enter_();
  try {
    run_kernels(id, task);
  } catch (...) {
    try {
      leave_();
    } catch (...) {
      // The kernel's failure is the one to report.
    }
    throw;
  }
  leave_();
}

void CpuTaskWork::run_kernels(TaskId id, const TaskView& task) {
  if (task.ops == kNoOps) {
    // A task-graph file gave a duration and no ops: the core is kept busy that long.
    const int64_t until = steady_now_ns() + static_cast<int64_t>(task.duration.seconds() * 1e9);
    while (steady_now_ns() < until) {
    }
    return;
  }
  const auto ops = graph_.op_list(task.ops);
  auto& sets = operands_.at(operand_key(task));
  const auto& bound = bound_.at(task.ops);
  std::byte* const frame = tensors_.frame(task.tag);
  std::vector<int64_t>& times = op_ns_[local_.at(id)];
  int64_t before = steady_now_ns();
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const BoundOperand& b : bound[i]) {
      sets[i]->point(b.operand, b.at.in(frame) + b.offset_bytes);
    }
    kernels::run_cpu(ops[i], *sets[i]);
    const int64_t after = steady_now_ns();
    times[i] = after - before;
    before = after;
  }
}

void CpuTaskWork::copy(const TaskView& task) {
  auto& [from, to] = copies_.at(copy_key(task));
  std::memcpy(to.data(), from.data(), from.size());
}

void CpuTaskWork::allocate(const TaskView& task) {
  const int64_t bytes = std::max<int64_t>(task.bytes.count(), 1);
  std::byte* data = nullptr;
  {
    std::lock_guard lock(memory_mu_);
    // A step allocates its persistent state (weights, gradients, optimizer states) and never
    // frees it: when the next step allocates it again, it is the same state, held already.
    if (task.buffer != 0) {
      if (auto it = live_.find(block_key(task)); it != live_.end() && it->second.bytes == bytes)
        return;
    }
    if (auto it = cached_.find(bytes); it != cached_.end()) {
      data = it->second;
      cached_.erase(it);
    }
  }
  if (!data) {
    // Fresh pages are touched here, as a framework's first allocation of a size faults them
    // in; the warm-up step takes those faults, and the measured steps reuse the blocks.
    data = static_cast<std::byte*>(
        std::aligned_alloc(64, (static_cast<size_t>(bytes) + 63) / 64 * 64));
    if (!data) throw std::bad_alloc();
    std::memset(data, 0, static_cast<size_t>(bytes));
  }
  std::lock_guard lock(memory_mu_);
  live_.emplace(block_key(task), Block{data, bytes});
  allocated_bytes_ += bytes;
  peak_allocated_bytes_ = std::max(peak_allocated_bytes_, allocated_bytes_);
}

void CpuTaskWork::release(const TaskView& task) {
  std::lock_guard lock(memory_mu_);
  const auto it = live_.find(block_key(task));
  if (it == live_.end()) {
    throw std::invalid_argument("free \"" + std::string(task.name) +
                                "\": its rank holds no such buffer");
  }
  allocated_bytes_ -= it->second.bytes;
  cached_.emplace(it->second.bytes, it->second.data);
  live_.erase(it);
}

}  // namespace dtsim::executor
