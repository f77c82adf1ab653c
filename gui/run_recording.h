// What the GUI's views read of a run besides its summary: every task's span for the
// timeline, and each rank's memory over time with what it held at its peak, taken from the
// run's alloc and free records as they finish.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

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

struct RankMemory {
  std::vector<MemoryPoint> curve;  // one point per alloc or free, in time order
  int64_t peak = 0;
  Time peak_at;
  // Bytes held per category (indexed like kAllMemoryCategories) at the first instant of
  // the peak.
  std::array<int64_t, kMemoryCategories> at_peak{};
};

class RunRecording : public SimObserver {
 public:
  // `graph` (the lowered step) must outlive the recording. Spans are kept for the first
  // ranks whose tasks number at most `max_spans` in all (every rank of a 1,024-GPU GPT-3
  // step; the first hundreds of a 16,384-GPU one), memory for every rank.
  RunRecording(const TaskGraph& graph, int ranks, int64_t max_spans = 16 << 20);

  void on_task(const TaskRecord& r) override;

  // Each recorded rank's tasks, sorted by start once the run is over (sort_spans).
  const std::vector<std::vector<Span>>& spans() const { return spans_; }
  int recorded_ranks() const { return static_cast<int>(spans_.size()); }
  void sort_spans();
  const std::vector<RankMemory>& memory() const { return memory_; }
  int ranks() const { return static_cast<int>(memory_.size()); }

 private:
  const TaskGraph& graph_;
  std::vector<std::vector<Span>> spans_;
  std::vector<RankMemory> memory_;
  std::vector<std::array<int64_t, kMemoryCategories>> held_;
};

}  // namespace dtsim::gui
