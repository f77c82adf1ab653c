// Link statistics accumulation and busy-span reporting.
#include "sim/link_stats.h"

namespace dtsim {

void LinkStatsTable::flush(LinkId l, Time now) {
  Entry& e = links_[l];
  if (now <= e.last) return;
  const double dt = (now - e.last).seconds();
  e.stats.bytes += e.load * dt;
  e.span_bytes += e.load * dt;
  if (e.load > 0) e.stats.busy += now - e.last;
  e.last = now;
}

void LinkStatsTable::set_load(LinkId l, double bytes_per_s, Time now) {
  flush(l, now);
  Entry& e = links_[l];
  const bool was_busy = e.load > 0;
  const bool busy = bytes_per_s > 0;
  if (!was_busy && busy) {
    e.span_start = now;
    e.span_bytes = 0;
  } else if (was_busy && !busy && !observers_.empty()) {
    observers_.link_busy(LinkBusyRecord{l, e.span_start, now, e.span_bytes, 1});
  }
  e.load = bytes_per_s;
  const double capacity = topology_.link(l).bandwidth.bytes_per_second();
  e.stats.peak_utilization = std::max(e.stats.peak_utilization, bytes_per_s / capacity);
}

void LinkStatsTable::add_traffic(LinkId l, double bytes, Duration busy, double load, Time start,
                                 Time end, int64_t rounds) {
  Entry& e = links_[l];
  e.stats.bytes += bytes;
  e.stats.busy += busy;
  const double capacity = topology_.link(l).bandwidth.bytes_per_second();
  e.stats.peak_utilization = std::max(e.stats.peak_utilization, load / capacity);
  if (!observers_.empty()) observers_.link_busy(LinkBusyRecord{l, start, end, bytes, rounds});
}

void LinkStatsTable::finish(Time end) {
  for (LinkId l = 0; l < links_.size(); ++l) {
    if (links_[l].load > 0) set_load(l, 0, end);
  }
}

}  // namespace dtsim
