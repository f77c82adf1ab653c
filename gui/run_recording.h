// What the GUI's views read of a run besides its summary: every task's span for the
// timeline, and each rank's memory over time with what it held at its peak, taken from the
// run's alloc and free records as they finish.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "runner/memory_estimate.h"
#include "sim/observer.h"
#include "sim/task_graph.h"

namespace dtsim::gui {

inline constexpr size_t kMemoryCategories = std::size(kAllMemoryCategories);

struct MemoryPoint {
  Time at;
  int64_t in_use = 0;  // bytes
};

// A task's span; its rank, stream, kind and name are the graph's (TaskGraph::task).
struct Span {
  TaskId task = 0;
  Time start;
  Time end;
};

// The memory estimate counts spans at this size (runner/memory_estimate.h).
static_assert(sizeof(Span) == kTimelineSpanBytes);

struct RankMemory {
  std::vector<MemoryPoint> curve;  // one point per alloc or free, in time order
  int64_t peak = 0;
  Time peak_at;
  // Bytes held per category (indexed like kAllMemoryCategories) at the first instant of
  // the peak.
  std::array<int64_t, kMemoryCategories> at_peak{};
};

// Tasks of up to this many spans are recorded: 24 bytes each, 384 MiB (every rank of a
// 16,384-GPU GPT-3 step, 6.5 M tasks); memory is recorded for every rank.
inline constexpr int64_t kSpanBudget = int64_t{16} << 20;

class RunRecording : public SimObserver {
 public:
  // `graph` (the lowered step) must outlive the recording. Spans are kept for the ranks of
  // `wanted` first, in its order, then for the ranks from the first up, as long as their
  // tasks number at most `max_spans` in all (every rank when they fit; at least one).
  RunRecording(const TaskGraph& graph, int ranks, const std::vector<int>& wanted = {},
               int64_t max_spans = kSpanBudget);

  void on_task(const TaskRecord& r) override;

  bool recorded(int rank) const { return slot_[static_cast<size_t>(rank)] >= 0; }
  // A recorded rank's tasks, sorted by start once the run is over (sort_spans); empty for a
  // rank that is not recorded.
  const std::vector<Span>& spans(int rank) const;
  int recorded_ranks() const { return static_cast<int>(spans_.size()); }
  bool complete() const { return recorded_ranks() == ranks(); }
  void sort_spans();
  const std::vector<RankMemory>& memory() const { return memory_; }
  int ranks() const { return static_cast<int>(memory_.size()); }

 private:
  const TaskGraph& graph_;
  std::vector<int> slot_;  // per rank: its index in spans_, -1 when not recorded
  std::vector<std::vector<Span>> spans_;
  std::vector<RankMemory> memory_;
  std::vector<std::array<int64_t, kMemoryCategories>> held_;
};

}  // namespace dtsim::gui
