// Recording a run's tasks and memory for the GUI.
#include "gui/run_recording.h"

#include <algorithm>

namespace dtsim::gui {

RunRecording::RunRecording(const TaskGraph& graph, int ranks, const std::vector<int>& wanted,
                           int64_t max_spans)
    : graph_(graph),
      slot_(static_cast<size_t>(ranks), -1),
      memory_(static_cast<size_t>(ranks)),
      held_(static_cast<size_t>(ranks)) {
  std::vector<int64_t> per_rank(static_cast<size_t>(ranks));
  for (const TaskView t : graph.tasks()) {
    if (t.rank >= 0 && t.rank < ranks) ++per_rank[static_cast<size_t>(t.rank)];
  }
  std::vector<int> order;
  for (int r : wanted) {
    if (r >= 0 && r < ranks) order.push_back(r);
  }
  for (int r = 0; r < ranks; ++r) order.push_back(r);
  int64_t total = 0;
  for (int r : order) {
    if (slot_[static_cast<size_t>(r)] >= 0) continue;
    total += per_rank[static_cast<size_t>(r)];
    if (total > max_spans && !spans_.empty()) break;
    slot_[static_cast<size_t>(r)] = static_cast<int>(spans_.size());
    spans_.emplace_back().reserve(static_cast<size_t>(per_rank[static_cast<size_t>(r)]));
  }
}

const std::vector<Span>& RunRecording::spans(int rank) const {
  static const std::vector<Span> kNone;
  const int slot = slot_[static_cast<size_t>(rank)];
  return slot < 0 ? kNone : spans_[static_cast<size_t>(slot)];
}

void RunRecording::sort_spans() {
  for (auto& rank : spans_) {
    std::stable_sort(rank.begin(), rank.end(),
                     [](const Span& a, const Span& b) { return a.start < b.start; });
  }
}

void RunRecording::on_task(const TaskRecord& r) {
  if (r.rank < 0 || r.rank >= ranks()) return;
  if (const int slot = slot_[static_cast<size_t>(r.rank)]; slot >= 0)
    spans_[static_cast<size_t>(slot)].push_back({r.task, r.start, r.end});
  if (r.kind != TaskKind::kAlloc && r.kind != TaskKind::kFree) return;
  const TaskView task = graph_.task(r.task);
  const int64_t bytes = task.bytes.count();
  const int64_t delta = r.kind == TaskKind::kAlloc ? bytes : -bytes;
  RankMemory& m = memory_[static_cast<size_t>(r.rank)];
  auto& held = held_[static_cast<size_t>(r.rank)];
  held[static_cast<size_t>(task.memory)] += delta;
  const int64_t in_use = (m.curve.empty() ? 0 : m.curve.back().in_use) + delta;
  m.curve.push_back({r.end, in_use});
  if (in_use > m.peak) {
    m.peak = in_use;
    m.peak_at = r.end;
    m.at_peak = held;
  }
}

}  // namespace dtsim::gui
