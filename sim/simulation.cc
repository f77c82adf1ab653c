// Simulation set-up.
#include "sim/simulation.h"

#include <algorithm>
#include <stdexcept>

#include "sim/check.h"
#include "sim/flow_network.h"
#include "sim/group_links.h"
#include "sim/task_runtime.h"

namespace dtsim {

Simulation::Simulation(const Cluster& cluster, const SimulationOptions& options)
    : cluster_(cluster),
      router_(cluster.topology),
      compute_(engine_, cluster.num_ranks()),
      collective_costs_(options.collective_costs),
      ranks_share_one_cpu_(options.ranks_share_one_cpu) {
  network_ =
      make_network_model(options.network_model, engine_, cluster.topology, router_, observers_);
  if (!network_) {
    throw std::invalid_argument("unknown network model \"" + options.network_model + "\"");
  }
  network_->set_fast_forward(options.fast_forward);
  network_->set_phase_replay(options.phase_replay);
  if (auto* flow = dynamic_cast<FlowNetworkModel*>(network_.get())) {
    flow->set_lone_flows(options.lone_flows);
    flow->set_solver_local_changes(options.solver_local_changes);
  }
  engine_.add_model(network_.get());
  engine_.add_model(&compute_);
}

Simulation::~Simulation() = default;

RunResult Simulation::run(const TaskGraph& graph, const RunControl& control) {
  DTSIM_CHECK(!ran_, "a Simulation runs one graph");
  ran_ = true;
  TaskRuntime runtime(*this, graph);
  return runtime.run(control);
}

double Simulation::peak_bytes_for(const TaskGraphCounts& counts, int ranks, size_t streams,
                                  bool observed) {
  return TaskRuntime::peak_bytes_for(counts, ranks, streams, observed);
}

double Simulation::network_bytes_for(const TaskGraph* graph) {
  return TaskRuntime::network_bytes_for(*this, graph);
}

GroupLayout Simulation::layout_of(const std::vector<int>& members) const {
  return group_layout(cluster_, members);
}

Duration Simulation::p2p_protocol_cost(int src, int dst, Bytes bytes) {
  const std::vector<int> pair{src, dst};
  const GroupLayout layout = layout_of(pair);
  return protocol_cost(CollectiveOp::kSendRecv, CollectiveAlgorithm::kDirect, layout, bytes, {},
                       alpha_beta(layout));
}

AlphaBeta Simulation::alpha_beta(const GroupLayout& layout) {
  return group_alpha_beta(cluster_, router_, layout);
}

}  // namespace dtsim
