// Alpha-beta network model: a round lasts as long as its slowest transfer.
#include "sim/analytical_network.h"

#include <algorithm>

#include "sim/clock_range.h"

namespace dtsim {

const AnalyticalNetworkModel::RouteSummary& AnalyticalNetworkModel::summary(VertexId src,
                                                                            VertexId dst) {
  const uint64_t pair = PairMap<RouteSummary>::key(src, dst);
  if (const RouteSummary* known = summaries_.find(pair)) return *known;
  RouteSummary s;
  s.links = router_.route_ref(src, dst);
  const auto route = router_.links(s.links);
  s.latency = route_latency_within_clock(topology_, route);
  double bottleneck = 1e300;
  for (LinkId l : route) bottleneck = std::min(bottleneck, topology_.link(l).bandwidth.bytes_per_second());
  s.bottleneck_bytes_per_s = bottleneck;
  return summaries_.insert(pair, s);
}

AnalyticalNetworkModel::PricedRound AnalyticalNetworkModel::price(
    const std::vector<FlowSpec>& flows) {
  PricedRound out;
  out.transfers = flows.size();
  if (round_bytes_.size() != topology_.num_links()) {
    round_bytes_.assign(topology_.num_links(), 0);
    round_longest_.assign(topology_.num_links(), Duration::zero());
    round_touched_.assign(topology_.num_links(), 0);
  }
  // Per link, the round's bytes add up in the order of its transfers (one sum per link) and
  // its longest transfer is kept; the links are listed in link order at the end.
  touched_.clear();
  for (const FlowSpec& f : flows) {
    if (f.src == f.dst) continue;
    const RouteSummary& r = summary(f.src, f.dst);
    const double bottleneck = r.bottleneck_bytes_per_s;
    const Duration transfer = f.bytes / Bandwidth::bytes_per_s(bottleneck);
    const auto whole = sum_within_clock(r.latency, transfer);
    if (!whole) {
      clear_round();
      throw_past_clock("a transfer of " + std::to_string(f.bytes.count()) + " bytes at " +
                           format_seconds(bottleneck) + " B/s (its route's slowest link)",
                       r.latency.seconds() + f.bytes.as_double() / bottleneck);
    }
    out.round = std::max(out.round, *whole);
    for (LinkId l : router_.links(r.links)) {
      if (!round_touched_[l]) {
        round_touched_[l] = 1;
        touched_.push_back(l);
      }
      round_bytes_[l] += f.bytes.as_double();
      round_longest_[l] = std::max(round_longest_[l], transfer);
    }
  }
  std::sort(touched_.begin(), touched_.end());
  out.links.reserve(touched_.size());
  for (LinkId l : touched_) out.links.push_back({l, round_bytes_[l], round_longest_[l]});
  clear_round();
  return out;
}

void AnalyticalNetworkModel::clear_round() {
  for (LinkId l : touched_) {
    round_bytes_[l] = 0;
    round_longest_[l] = Duration::zero();
    round_touched_[l] = 0;
  }
  touched_.clear();
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
                                         size_t phase, std::function<std::vector<FlowSpec>()> flows,
                                         int64_t repeat, bool /*alone*/,
                                         std::function<void()> done) {
  auto it = phases_.find({plan.get(), phase});
  if (it == phases_.end()) {
    it = phases_.emplace(std::pair{plan.get(), phase}, std::pair{plan, price(flows())}).first;
  }
  run(it->second.second, repeat, std::move(done));
}

AnalyticalNetworkModel::PricedPlan AnalyticalNetworkModel::price_plan(
    const CollectivePlan& plan, const std::function<std::vector<FlowSpec>(size_t)>& flows) {
  if (plan_loads_.size() != topology_.num_links()) {
    plan_loads_.assign(topology_.num_links(), PlanLoad{});
    plan_touched_.assign(topology_.num_links(), 0);
  }
  PricedPlan out;
  plan_links_.clear();
  for (size_t i = 0; i < plan.phases.size(); ++i) {
    const int64_t repeat = plan.phases[i].repeat;
    PricedRound round;
    try {
      round = price(flows(i));
    } catch (...) {
      clear_plan();
      throw;
    }
    out.steps.push_back({round.round, repeat, round.transfers});
    // As run() adds a phase's traffic: its bytes and busy time times its rounds, and the
    // rate of one round toward the peak. The bytes are whole numbers, so adding a plan's
    // phases up first gives the same sums.
    for (const LinkLoad& load : round.links) {
      PlanLoad& p = plan_loads_[load.link];
      if (!plan_touched_[load.link]) {
        plan_touched_[load.link] = 1;
        plan_links_.push_back(load.link);
      }
      p.bytes += load.bytes * static_cast<double>(repeat);
      p.busy += load.longest * repeat;
      const double rate = load.longest.count_ns() > 0 ? load.bytes / load.longest.seconds() : 0;
      p.peak_rate = std::max(p.peak_rate, rate);
    }
  }
  std::sort(plan_links_.begin(), plan_links_.end());
  out.links.reserve(plan_links_.size());
  for (LinkId l : plan_links_) {
    out.links.push_back(plan_loads_[l]);
    out.links.back().link = l;
  }
  clear_plan();
  return out;
}

void AnalyticalNetworkModel::clear_plan() {
  for (LinkId l : plan_links_) {
    plan_loads_[l] = PlanLoad{};
    plan_touched_[l] = 0;
  }
  plan_links_.clear();
}

void AnalyticalNetworkModel::start_plan(const std::shared_ptr<const CollectivePlan>& plan,
                                        const std::function<std::vector<FlowSpec>(size_t)>& flows,
                                        std::function<void()> done) {
  auto it = plans_.find(plan.get());
  if (it == plans_.end()) it = plans_.emplace(plan.get(), std::pair{plan, price_plan(*plan, flows)}).first;
  const PricedPlan& priced = it->second.second;
  const Time start = engine_.now();
  // The phases back to back, each ending where run() would end it.
  Time end = start;
  int64_t rounds = 0;
  for (const PricedPlan::Step& step : priced.steps) {
    const auto last = later_within_clock(end, step.round, step.repeat);
    if (!last) {
      throw_past_clock("a group of " + std::to_string(step.transfers) + " transfer(s), " +
                           std::to_string(step.repeat) + " round(s) of " +
                           format_seconds(step.round.seconds()) + " s each,",
                       end.seconds() + step.round.seconds() * static_cast<double>(step.repeat));
    }
    end = *last;
    rounds += step.repeat;
    fast_forwarded_rounds_ += step.repeat - 1;
  }
  for (const PlanLoad& load : priced.links) {
    link_stats_.add_traffic(load.link, load.bytes, load.busy, load.peak_rate, start, end, rounds);
  }
  engine_.schedule_at(end, std::move(done));
}

}  // namespace dtsim
