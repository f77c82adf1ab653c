// The critical path of a run as a report: where its time went (per kind of task, and the
// gaps no task on the path accounts for), and every step as a CSV row.
#pragma once

#include <array>
#include <ostream>
#include <string>
#include <vector>

#include "sim/critical_path.h"

namespace dtsim {

struct CriticalPathTotals {
  size_t steps = 0;
  // Seconds of the path each kind of task accounts for (indexed like kAllTaskKinds): a
  // step counts from the later of its start and the previous step's end.
  std::array<double, std::size(kAllTaskKinds)> seconds{};
  double gaps_s = 0;  // between one step's end and the next one's start
  double span_s = 0;  // first start to last end
};

CriticalPathTotals critical_path_totals(const TaskTimes& times, const TaskGraph& graph,
                                        const std::vector<CriticalStep>& path);
// Lines for a terminal: the totals and the steps that account for the most of the path.
std::string format_critical_path_text(const CriticalPathTotals& totals, const TaskTimes& times,
                                      const TaskGraph& graph, const std::vector<CriticalStep>& path,
                                      size_t longest = 5);
// One row per step: step,task,rank,stream,kind,name,start_s,end_s,link.
void write_critical_path_csv(std::ostream& out, const TaskTimes& times, const TaskGraph& graph,
                             const std::vector<CriticalStep>& path);

}  // namespace dtsim
