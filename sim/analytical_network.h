// `analytical` network model: alpha-beta per transfer (route latency + bytes / bottleneck
// bandwidth), no contention between transfers. Fastest; an optimistic bound.
#pragma once

#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/collectives/collective_plan.h"
#include "sim/pair_map.h"
#include "sim/network_model.h"

namespace dtsim {

// A collective's phase is priced once: its round's duration and what the round puts on
// each link, in link order, from a summary of each (src, dst) route made once (its links,
// latency and narrowest link). Every later call of the same plan replays it, so a
// data-parallel call over 16,384 ranks is routed once, not every time a bucket is reduced.
// While nothing observes the links' busy spans, a call is one step: its plan's phases are
// added up when it is first priced, and each call adds its links' traffic once.
class AnalyticalNetworkModel final : public NetworkModel {
 public:
  using NetworkModel::NetworkModel;
  std::string_view name() const override { return "analytical"; }
  void start_group(std::vector<FlowSpec> flows, int64_t repeat, std::function<void()> done) override;
  void start_phase(const std::shared_ptr<const CollectivePlan>& plan, size_t phase,
                   std::function<std::vector<FlowSpec>()> flows, int64_t repeat, bool alone,
                   std::function<void()> done) override;
  // Without observers of its links' busy spans, a call is one step: its phases' durations
  // added up and its links' traffic added once per call, from its plan priced once.
  bool runs_whole_plans() const override { return !link_stats_.observed(); }
  void start_plan(const std::shared_ptr<const CollectivePlan>& plan,
                  const std::function<std::vector<FlowSpec>(size_t)>& flows,
                  std::function<void()> done) override;
  Time next_completion() override { return Time::infinite(); }
  void complete_due(Time) override {}

  // A route's links with what pricing a transfer on it needs, summed once per pair.
  struct RouteSummary {
    Router::RouteRef links;
    Duration latency;
    double bottleneck_bytes_per_s = 0;
  };
  struct LinkLoad {
    LinkId link = 0;
    double bytes = 0;  // of one round
    Duration longest;  // the longest transfer crossing it
  };
  struct PricedRound {
    Duration round;  // its slowest transfer, latency included
    size_t transfers = 0;
    std::vector<LinkLoad> links;  // in link order
  };
  // A link's traffic over all rounds of a whole plan.
  struct PlanLoad {
    LinkId link = 0;
    double bytes = 0;
    Duration busy;
    double peak_rate = 0;  // bytes per second of its busiest round
  };
  struct PricedPlan {
    struct Step {
      Duration round;
      int64_t repeat = 1;
      size_t transfers = 0;
    };
    std::vector<Step> steps;     // per phase
    std::vector<PlanLoad> links;  // in link order
  };
  // What the memo keeps for a phase of `crossings` link crossings (its node, and at most
  // one entry per crossing), and what pricing it holds meanwhile (one per crossing).
  static double phase_bytes_for(double crossings) {
    return 64 + sizeof(PricedRound) + crossings * sizeof(LinkLoad);
  }
  // What the memo keeps for a whole plan whose phases cross links `crossings` times in all.
  static double plan_bytes_for(double phases, double crossings) {
    return 64 + sizeof(PricedPlan) + phases * sizeof(PricedPlan::Step) +
           crossings * sizeof(PlanLoad);
  }
  // What the model keeps per (src, dst) pair it routed, beside the router's own route.
  static double route_bytes() { return PairMap<RouteSummary>::entry_bytes(); }
  // What pricing holds meanwhile over a topology of `links` links: a slot per link.
  static double pricing_bytes_for(double links) {
    return links * (sizeof(double) + sizeof(Duration) + 1 + sizeof(LinkId) +  // a round's
                    sizeof(PlanLoad) + 1 + sizeof(LinkId));                  // a plan's
  }

 private:
  // Valid until the next call.
  const RouteSummary& summary(VertexId src, VertexId dst);
  PricedRound price(const std::vector<FlowSpec>& flows);
  void clear_round();
  void run(const PricedRound& priced, int64_t repeat, std::function<void()> done);
  PricedPlan price_plan(const CollectivePlan& plan,
                        const std::function<std::vector<FlowSpec>(size_t)>& flows);
  void clear_plan();

  // By plan and phase. The entry holds the plan, so that its address names it for the run.
  std::map<std::pair<const CollectivePlan*, size_t>,
           std::pair<std::shared_ptr<const CollectivePlan>, PricedRound>>
      phases_;
  // By plan, for start_plan; the entry holds the plan, as phases_ does.
  std::unordered_map<const CollectivePlan*,
                     std::pair<std::shared_ptr<const CollectivePlan>, PricedPlan>>
      plans_;
  PairMap<RouteSummary> summaries_;  // by (src, dst) vertex pair
  // One round's bytes and longest transfer per link while it is priced, indexed by link
  // (reset after each round: only the links it touched).
  std::vector<double> round_bytes_;
  std::vector<Duration> round_longest_;
  std::vector<char> round_touched_;
  std::vector<LinkId> touched_;
  // The same for a whole plan's rounds while it is priced.
  std::vector<PlanLoad> plan_loads_;
  std::vector<char> plan_touched_;
  std::vector<LinkId> plan_links_;
};

}  // namespace dtsim
