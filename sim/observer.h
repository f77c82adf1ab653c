// Records the simulator emits; writers (reports/), the CLI and the GUI subscribe to them.
// sim/ never writes files or prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/collectives/collective_plan.h"
#include "sim/topology.h"
#include "sim/units.h"

namespace dtsim {

enum class TaskKind : uint8_t { kCompute, kCollective, kSend, kRecv, kMemcpy, kAlloc, kFree };
inline constexpr TaskKind kAllTaskKinds[] = {TaskKind::kCompute, TaskKind::kCollective,
                                             TaskKind::kSend,    TaskKind::kRecv,
                                             TaskKind::kMemcpy,  TaskKind::kAlloc,
                                             TaskKind::kFree};
std::string_view task_kind_name(TaskKind k);
std::optional<TaskKind> task_kind_from_name(std::string_view name);

struct TaskRecord {
  uint32_t task = 0;
  int rank = 0;
  std::string_view stream;
  std::string_view name;
  TaskKind kind = TaskKind::kCompute;
  Time start;
  Time end;
};

struct CollectiveRecord {
  uint32_t collective = 0;  // index in the TaskGraph's collectives
  std::string_view label;
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // resolved (never kAuto)
  Bytes bytes;
  int ranks = 0;
  int64_t steps = 0;  // sum of phase repeats
  Time start;
  Time end;
  int calls = 1;  // the calls the task stood for (CollectiveCall::calls)
};

// A link carried traffic without a pause from start to end. When the network model
// fast-forwarded `rounds` identical rounds, the span covers all of them.
struct LinkBusyRecord {
  LinkId link = 0;
  Time start;
  Time end;
  double bytes = 0;
  int64_t rounds = 1;
};

// A rank's memory went over its capacity (first time only).
struct MemoryOverflowRecord {
  int rank = 0;
  uint32_t task = 0;
  Bytes in_use;
  Bytes capacity;
  Time at;
};

class SimObserver {
 public:
  virtual ~SimObserver() = default;
  virtual void on_task(const TaskRecord&) {}
  virtual void on_collective(const CollectiveRecord&) {}
  virtual void on_link_busy(const LinkBusyRecord&) {}
  virtual void on_memory_overflow(const MemoryOverflowRecord&) {}
};

// Fans records out to every subscribed observer, in subscription order.
class ObserverList {
 public:
  void add(SimObserver* o) { observers_.push_back(o); }
  bool empty() const { return observers_.empty(); }
  void task(const TaskRecord& r) const { for (auto* o : observers_) o->on_task(r); }
  void collective(const CollectiveRecord& r) const { for (auto* o : observers_) o->on_collective(r); }
  void link_busy(const LinkBusyRecord& r) const { for (auto* o : observers_) o->on_link_busy(r); }
  void memory_overflow(const MemoryOverflowRecord& r) const {
    for (auto* o : observers_) o->on_memory_overflow(r);
  }

 private:
  std::vector<SimObserver*> observers_;
};

}  // namespace dtsim
