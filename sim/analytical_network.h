// `analytical` network model: alpha-beta per transfer (route latency + bytes / bottleneck
// bandwidth), no contention between transfers. Fastest; an optimistic bound.
#pragma once

#include <map>
#include <memory>
#include <utility>

#include "sim/collectives/collective_plan.h"
#include "sim/network_model.h"

namespace dtsim {

// A collective's phase is priced once: its round's duration and what the round puts on
// each link, in link order. Every later call of the same plan replays it (its link
// statistics added link by link, per round, not per transfer), so a data-parallel call
// over 16,384 ranks is routed once, not every time a bucket is reduced.
class AnalyticalNetworkModel final : public NetworkModel {
 public:
  using NetworkModel::NetworkModel;
  std::string_view name() const override { return "analytical"; }
  void start_group(std::vector<FlowSpec> flows, int64_t repeat, std::function<void()> done) override;
  void start_phase(const std::shared_ptr<const CollectivePlan>& plan, size_t phase,
                   const std::function<std::vector<FlowSpec>()>& flows, int64_t repeat,
                   std::function<void()> done) override;
  Time next_completion() override { return Time::infinite(); }
  void complete_due(Time) override {}

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
  // What the memo keeps for a phase of `crossings` link crossings (its node, and at most
  // one entry per crossing), and what pricing it holds meanwhile (one per crossing).
  static double phase_bytes_for(double crossings) {
    return 64 + sizeof(PricedRound) + crossings * sizeof(LinkLoad);
  }
  static double pricing_bytes_for(double crossings) { return crossings * sizeof(LinkLoad); }

 private:
  PricedRound price(const std::vector<FlowSpec>& flows);
  void run(const PricedRound& priced, int64_t repeat, std::function<void()> done);

  // By plan and phase. The entry holds the plan, so that its address names it for the run.
  std::map<std::pair<const CollectivePlan*, size_t>,
           std::pair<std::shared_ptr<const CollectivePlan>, PricedRound>>
      phases_;
};

}  // namespace dtsim
