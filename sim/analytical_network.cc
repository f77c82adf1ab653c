// Alpha-beta network model: a round lasts as long as its slowest transfer.
#include "sim/analytical_network.h"

#include <algorithm>

#include "sim/clock_range.h"

namespace dtsim {

AnalyticalNetworkModel::PricedRound AnalyticalNetworkModel::price(
    const std::vector<FlowSpec>& flows) {
  PricedRound out;
  out.transfers = flows.size();
  // Per link: bytes of one round, longest transfer crossing it, gathered in crossing order
  // and then merged by link.
  std::vector<LinkLoad> crossings;
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
    out.round = std::max(out.round, *whole);
    for (LinkId l : route) crossings.push_back({l, f.bytes.as_double(), transfer});
  }
  // Stable: a link's bytes add up in the order of its transfers, as one sum per link.
  std::stable_sort(crossings.begin(), crossings.end(),
                   [](const LinkLoad& a, const LinkLoad& b) { return a.link < b.link; });
  for (const LinkLoad& c : crossings) {
    if (out.links.empty() || out.links.back().link != c.link) {
      out.links.push_back({c.link, 0, Duration::zero()});
    }
    out.links.back().bytes += c.bytes;
    out.links.back().longest = std::max(out.links.back().longest, c.longest);
  }
  return out;
}

void AnalyticalNetworkModel::run(const PricedRound& priced, int64_t repeat,
                                 std::function<void()> done) {
  const Time start = engine_.now();
  // Rounds of the analytical model are exact: a group that would outlast the clock will.
  const auto last = later_within_clock(start, priced.round, repeat);
  if (!last) {
    throw_past_clock("a group of " + std::to_string(priced.transfers) + " transfer(s), " +
                         std::to_string(repeat) + " round(s) of " +
                         format_seconds(priced.round.seconds()) + " s each,",
                     start.seconds() + priced.round.seconds() * static_cast<double>(repeat));
  }
  const Time end = *last;
  for (const LinkLoad& load : priced.links) {
    // Without contention a link's load is the sum of its transfers' rates; peaks above 1
    // show where the analytical model is optimistic.
    const double rate = load.longest.count_ns() > 0 ? load.bytes / load.longest.seconds() : 0;
    link_stats_.add_traffic(load.link, load.bytes * static_cast<double>(repeat),
                            load.longest * repeat, rate, start,
                            repeat == 1 ? start + load.longest : end, repeat);
  }
  if (repeat > 1) fast_forwarded_rounds_ += repeat - 1;
  engine_.schedule_at(end, std::move(done));
}

void AnalyticalNetworkModel::start_group(std::vector<FlowSpec> flows, int64_t repeat,
                                         std::function<void()> done) {
  run(price(flows), repeat, std::move(done));
}

void AnalyticalNetworkModel::start_phase(const std::shared_ptr<const CollectivePlan>& plan,
                                         size_t phase,
                                         const std::function<std::vector<FlowSpec>()>& flows,
                                         int64_t repeat, std::function<void()> done) {
  auto it = phases_.find({plan.get(), phase});
  if (it == phases_.end()) {
    it = phases_.emplace(std::pair{plan.get(), phase}, std::pair{plan, price(flows())}).first;
  }
  run(it->second.second, repeat, std::move(done));
}

}  // namespace dtsim
