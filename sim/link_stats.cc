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
  e.peak_load = std::max(e.peak_load, bytes_per_s);
}

void LinkStatsTable::add_traffic(LinkId l, double bytes, Duration busy, double load, Time start,
                                 Time end, int64_t rounds) {
  Entry& e = links_[l];
  e.stats.bytes += bytes;
  e.stats.busy += busy;
  e.peak_load = std::max(e.peak_load, load);
  if (!observers_.empty()) observers_.link_busy(LinkBusyRecord{l, start, end, bytes, rounds});
}

LinkStats LinkStatsTable::stats(LinkId l) const {
  LinkStats s = links_[l].stats;
  s.peak_utilization = links_[l].peak_load / topology_.link(l).bandwidth.bytes_per_second();
  return s;
}

void LinkStatsTable::finish(Time end) {
  for (LinkId l = 0; l < links_.size(); ++l) {
    if (links_[l].load > 0) set_load(l, 0, end);
  }
}

}  // namespace dtsim
