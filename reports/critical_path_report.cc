// Writing a run's critical path.
#include "reports/critical_path_report.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "reports/csv_tables.h"

namespace dtsim {
namespace {

// What each step of the path accounts for: its own seconds, from the later of its start and
// the previous steps' end (a receive posted early waits; its wait is the send's time) to its
// end, and the gap before it, when it starts after the previous steps have ended.
struct StepShare {
  double own_s = 0;
  double gap_s = 0;
};

std::vector<StepShare> step_shares(const TaskTimes& times, const std::vector<CriticalStep>& path) {
  std::vector<StepShare> out(path.size());
  if (path.empty()) return out;
  Time last = times.start[path.front().task];
  for (size_t i = 0; i < path.size(); ++i) {
    const Time start = times.start[path[i].task], end = times.end[path[i].task];
    if (start > last) out[i].gap_s = (start - last).seconds();
    const Time from = std::max(start, last);
    if (end > from) out[i].own_s = (end - from).seconds();
    last = std::max(last, end);
  }
  return out;
}

}  // namespace

CriticalPathTotals critical_path_totals(const TaskTimes& times, const TaskGraph& graph,
                                        const std::vector<CriticalStep>& path) {
  CriticalPathTotals t;
  t.steps = path.size();
  if (path.empty()) return t;
  t.span_s = (times.end[path.back().task] - times.start[path.front().task]).seconds();
  const std::vector<StepShare> shares = step_shares(times, path);
  for (size_t i = 0; i < path.size(); ++i) {
    t.gaps_s += shares[i].gap_s;
    t.seconds[static_cast<size_t>(graph.task(path[i].task).kind)] += shares[i].own_s;
  }
  return t;
}

std::string format_critical_path_text(const CriticalPathTotals& totals, const TaskTimes& times,
                                      const TaskGraph& graph, const std::vector<CriticalStep>& path,
                                      size_t longest) {
  std::string out =
      fmt::format("critical path: {} tasks over {:.6g} s:", totals.steps, totals.span_s);
  for (TaskKind k : kAllTaskKinds) {
    const double s = totals.seconds[static_cast<size_t>(k)];
    if (s > 0) out += fmt::format(" {} {:.6g} s,", task_kind_name(k), s);
  }
  out += fmt::format(" gaps {:.6g} s\n", totals.gaps_s);
  std::vector<size_t> order(path.size());
  std::iota(order.begin(), order.end(), 0);
  const std::vector<StepShare> shares = step_shares(times, path);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return shares[a].own_s > shares[b].own_s; });
  for (size_t i = 0; i < std::min(longest, order.size()); ++i) {
    const TaskView t = graph.task(path[order[i]].task);
    out += fmt::format("  {:>10.6g} s  rank {} {} {} \"{}\"\n", shares[order[i]].own_s, t.rank,
                       graph.streams()[t.stream], task_kind_name(t.kind), t.name);
  }
  return out;
}

void write_critical_path_csv(std::ostream& out, const TaskTimes& times, const TaskGraph& graph,
                             const std::vector<CriticalStep>& path) {
  out << "step,task,rank,stream,kind,name,start_s,end_s,link\n";
  for (size_t i = 0; i < path.size(); ++i) {
    const TaskView t = graph.task(path[i].task);
    out << fmt::format("{},{},{},{},{},{},{:.9f},{:.9f},{}\n", i, path[i].task, t.rank,
                       csv_field(graph.streams()[t.stream]), task_kind_name(t.kind),
                       csv_field(t.name), times.start[path[i].task].seconds(),
                       times.end[path[i].task].seconds(), critical_link_name(path[i].link));
  }
}

}  // namespace dtsim
