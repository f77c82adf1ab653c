// Per-link traffic statistics, accumulated whenever the load on a link changes.
#pragma once

#include <algorithm>
#include <vector>

#include "sim/observer.h"
#include "sim/topology.h"
#include "sim/units.h"

namespace dtsim {

struct LinkStats {
  double bytes = 0;           // bytes carried
  Duration busy;              // time with any traffic on the link
  double peak_utilization = 0;  // highest load / capacity seen (can exceed 1 in `analytical`)
};

// Integrates each link's load (bytes/s) over time. set_load() closes the interval since
// the last change; flush() closes it without changing the load. Busy spans go to the
// observers when a link falls idle.
class LinkStatsTable {
 public:
  LinkStatsTable(const Topology& topology, const ObserverList& observers)
      : topology_(topology), observers_(observers), links_(topology.num_links()) {}

  // Inline: a transfer's start and end each set the load of every link of its route.
  void set_load(LinkId l, double bytes_per_s, Time now) {
    flush(l, now);
    Entry& e = links_[l];
    const bool was_busy = e.load > 0;
    const bool busy = bytes_per_s > 0;
    if (!was_busy && busy) {
      e.span_start = now;
      e.span_bytes = 0;
    } else if (was_busy && !busy && !observers_.empty()) {
      report_busy_span(l, now);
    }
    e.load = bytes_per_s;
    if (bytes_per_s > e.peak_load) raise_peak(e, l, bytes_per_s);
  }
  void flush(LinkId l, Time now) {
    Entry& e = links_[l];
    if (now <= e.last) return;
    const double bytes = e.load * (now - e.last).seconds();
    e.stats.bytes += bytes;
    e.span_bytes += bytes;
    if (e.load > 0) e.stats.busy += now - e.last;
    e.last = now;
  }
  // Adds traffic worked out in closed form rather than by load changes (the analytical
  // model, and rounds the flow model fast-forwards): bytes and busy time grow by the given
  // amounts, `load` counts toward the peak, and one busy span [start, end] is reported.
  void add_traffic(LinkId l, double bytes, Duration busy, double load, Time start, Time end,
                   int64_t rounds) {
    Entry& e = links_[l];
    e.stats.bytes += bytes;
    e.stats.busy += busy;
    if (load > e.peak_load) raise_peak(e, l, load);
    if (!observers_.empty()) observers_.link_busy(LinkBusyRecord{l, start, end, bytes, rounds});
  }
  // Corrects the bytes integrated on a link by `delta` (a flow's completion is rounded up
  // to whole nanoseconds, so the integral of its rate overshoots its size slightly).
  void adjust_bytes(LinkId l, double delta) {
    links_[l].stats.bytes += delta;
    links_[l].span_bytes += delta;
  }
  // Closes every open interval at `end` (call once when the simulation ends).
  void finish(Time end);

  const LinkStats& stats(LinkId l) const { return links_[l].stats; }
  // Whether anything watches the links' busy spans (the trace, the GUI's timeline).
  bool observed() const { return !observers_.empty(); }
  size_t size() const { return links_.size(); }

  // The bytes of one link's entry: what a memory estimate multiplies by the links.
  static constexpr size_t bytes_per_link();

 private:
  struct Entry {
    LinkStats stats;
    double load = 0;
    // The highest load seen: the peak utilization changes only when it does, so the common
    // call (a load no higher than before) needs neither the link's capacity nor a division.
    double peak_load = 0;
    Time last;
    Time span_start;
    double span_bytes = 0;
  };
  // A load above the link's highest so far: the peak utilization is worked out again.
  void raise_peak(Entry& e, LinkId l, double load);
  // The busy span that ends at `now` goes to the observers.
  void report_busy_span(LinkId l, Time now);

  const Topology& topology_;
  const ObserverList& observers_;
  std::vector<Entry> links_;
};

constexpr size_t LinkStatsTable::bytes_per_link() { return sizeof(Entry); }

}  // namespace dtsim
