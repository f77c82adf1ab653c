// `analytical` network model: alpha-beta per transfer (route latency + bytes / bottleneck
// bandwidth), no contention between transfers. Fastest; an optimistic bound.
#pragma once

#include "sim/network_model.h"

namespace dtsim {

class AnalyticalNetworkModel final : public NetworkModel {
 public:
  using NetworkModel::NetworkModel;
  std::string_view name() const override { return "analytical"; }
  void start_group(std::vector<FlowSpec> flows, int64_t repeat, std::function<void()> done) override;
  Time next_completion() override { return Time::infinite(); }
  void complete_due(Time) override {}
};

}  // namespace dtsim
