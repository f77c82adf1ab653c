// Link statistics accumulation and busy-span reporting.
#include "sim/link_stats.h"

namespace dtsim {

void LinkStatsTable::report_busy_span(LinkId l, Time now) {
  const Entry& e = links_[l];
  observers_.link_busy(LinkBusyRecord{l, e.span_start, now, e.span_bytes, 1});
}

void LinkStatsTable::raise_peak(Entry& e, LinkId l, double load) {
  // Division by the capacity is monotonic, so the highest load gives the highest
  // utilization bit for bit.
  e.peak_load = load;
  const double capacity = topology_.link(l).bandwidth.bytes_per_second();
  e.stats.peak_utilization = std::max(e.stats.peak_utilization, load / capacity);
}

void LinkStatsTable::finish(Time end) {
  for (LinkId l = 0; l < links_.size(); ++l) {
    if (links_[l].load > 0) set_load(l, 0, end);
  }
}

}  // namespace dtsim
