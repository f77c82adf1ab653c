// Registry of network models, selected by name.
#include "sim/network_model.h"

#include "sim/analytical_network.h"
#include "sim/flow_network.h"

namespace dtsim {

std::vector<NetworkModelInfo> network_models() {
  return {
      {"analytical", "alpha-beta per transfer (route latency + bytes / bottleneck), no contention"},
      {"flow", "flow-level max-min fair sharing along routes; contention between transfers (default)"},
  };
}

std::unique_ptr<NetworkModel> make_network_model(std::string_view name, Engine& engine,
                                                 const Topology& topology, Router& router,
                                                 const ObserverList& observers) {
  if (name == "analytical") {
    return std::make_unique<AnalyticalNetworkModel>(engine, topology, router, observers);
  }
  if (name == "flow") return std::make_unique<FlowNetworkModel>(engine, topology, router, observers);
  return nullptr;
}

}  // namespace dtsim
