// Recording a run's tasks and memory for the GUI.
#include "gui/run_recording.h"

#include <algorithm>

namespace dtsim::gui {

RunRecording::RunRecording(const TaskGraph& graph, int ranks, int64_t max_spans)
    : graph_(graph), memory_(static_cast<size_t>(ranks)), held_(static_cast<size_t>(ranks)) {
  std::vector<int64_t> per_rank(static_cast<size_t>(ranks));
  for (const TaskView t : graph.tasks()) {
    if (t.rank >= 0 && t.rank < ranks) ++per_rank[static_cast<size_t>(t.rank)];
  }
  int kept = 0;
  for (int64_t total = 0; kept < ranks; ++kept) {
    total += per_rank[static_cast<size_t>(kept)];
    if (total > max_spans && kept > 0) break;
  }
  spans_.resize(static_cast<size_t>(kept));
  for (int r = 0; r < kept; ++r)
    spans_[static_cast<size_t>(r)].reserve(static_cast<size_t>(per_rank[static_cast<size_t>(r)]));
}

void RunRecording::sort_spans() {
  for (auto& rank : spans_) {
    std::stable_sort(rank.begin(), rank.end(),
                     [](const Span& a, const Span& b) { return a.start < b.start; });
  }
}

void RunRecording::on_task(const TaskRecord& r) {
  if (r.rank >= 0 && r.rank < recorded_ranks())
    spans_[static_cast<size_t>(r.rank)].push_back({r.task, r.start, r.end});
  if (r.kind != TaskKind::kAlloc && r.kind != TaskKind::kFree) return;
  if (r.rank < 0 || r.rank >= ranks()) return;
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
