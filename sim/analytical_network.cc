// Alpha-beta network model: a round lasts as long as its slowest transfer.
#include "sim/analytical_network.h"

#include <algorithm>
#include <map>

#include "sim/clock_range.h"

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
      const auto sum = sum_within_clock(latency, topology_.link(l).latency);
      if (!sum)
        throw_past_clock("the latency of a route of " + std::to_string(route.size()) + " links",
                         latency.seconds() + topology_.link(l).latency.seconds());
      latency = *sum;
      bottleneck = std::min(bottleneck, topology_.link(l).bandwidth.bytes_per_second());
    }
    const Duration transfer = f.bytes / Bandwidth::bytes_per_s(bottleneck);
    const auto whole = sum_within_clock(latency, transfer);
    if (!whole) {
      throw_past_clock("a transfer of " + std::to_string(f.bytes.count()) + " bytes at " +
                           format_seconds(bottleneck) + " B/s (its route's slowest link)",
                       latency.seconds() + f.bytes.as_double() / bottleneck);
    }
    round = std::max(round, *whole);
    for (LinkId l : route) {
      auto& [bytes, longest] = per_link[l];
      bytes += f.bytes.as_double();
      longest = std::max(longest, transfer);
    }
  }
  // Rounds of the analytical model are exact: a group that would outlast the clock will.
  const auto last = later_within_clock(start, round, repeat);
  if (!last) {
    throw_past_clock("a group of " + std::to_string(flows.size()) + " transfer(s), " +
                         std::to_string(repeat) + " round(s) of " +
                         format_seconds(round.seconds()) + " s each,",
                     start.seconds() + round.seconds() * static_cast<double>(repeat));
  }
  const Time end = *last;
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
