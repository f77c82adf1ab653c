// Alpha-beta network model: a round lasts as long as its slowest transfer.
#include "sim/analytical_network.h"

#include <algorithm>
#include <map>

namespace dtsim {

void AnalyticalNetworkModel::start_group(std::vector<FlowSpec> flows, int64_t repeat,
                                         std::function<void()> done) {
  const Time start = engine_.now();
  Duration round;
  // Per link: bytes of one round, longest transfer crossing it. std::map keeps the
  // reporting order deterministic.
  std::map<LinkId, std::pair<double, Duration>> per_link;
  for (const FlowSpec& f : flows) {
    if (f.src == f.dst) continue;
    const auto route = router_.route(f.src, f.dst);
    Duration latency;
    double bottleneck = 1e300;
    for (LinkId l : route) {
      latency += topology_.link(l).latency;
      bottleneck = std::min(bottleneck, topology_.link(l).bandwidth.bytes_per_second());
    }
    const Duration transfer = f.bytes / Bandwidth::bytes_per_s(bottleneck);
    round = transfer.is_infinite() ? transfer : std::max(round, latency + transfer);
    if (round.is_infinite()) break;
    for (LinkId l : route) {
      auto& [bytes, longest] = per_link[l];
      bytes += f.bytes.as_double();
      longest = std::max(longest, transfer);
    }
  }
  // A group that would outlast the time type never completes: the run reports it stalled.
  if (round.is_infinite() || round.count_ns() > (INT64_MAX - start.count_ns()) / repeat) return;
  const Time end = start + round * repeat;
  for (const auto& [l, load] : per_link) {
    const auto& [bytes, longest] = load;
    // Without contention a link's load is the sum of its transfers' rates; peaks above 1
    // show where the analytical model is optimistic.
    const double rate = longest.count_ns() > 0 ? bytes / longest.seconds() : 0;
    link_stats_.add_traffic(l, bytes * static_cast<double>(repeat), longest * repeat, rate, start,
                            repeat == 1 ? start + longest : end, repeat);
  }
  if (repeat > 1) fast_forwarded_rounds_ += repeat - 1;
  engine_.schedule_at(end, std::move(done));
}

}  // namespace dtsim
