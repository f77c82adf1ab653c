// Simulation set-up and the alpha-beta summary of a group's links.
#include "sim/simulation.h"

#include <algorithm>
#include <stdexcept>

#include "sim/check.h"
#include "sim/task_runtime.h"

namespace dtsim {

Simulation::Simulation(const Cluster& cluster, const SimulationOptions& options)
    : cluster_(cluster), router_(cluster.topology), compute_(engine_, cluster.num_ranks()) {
  network_ = make_network_model(options.network_model, engine_, cluster.topology, router_, observers_);
  if (!network_) {
    throw std::invalid_argument("unknown network model \"" + options.network_model + "\"");
  }
  network_->set_fast_forward(options.fast_forward);
  engine_.add_model(network_.get());
  engine_.add_model(&compute_);
}

Simulation::~Simulation() = default;

RunResult Simulation::run(const TaskGraph& graph) {
  DTSIM_CHECK(!ran_, "a Simulation runs one graph");
  ran_ = true;
  TaskRuntime runtime(*this, graph);
  return runtime.run();
}

GroupLayout Simulation::layout_of(const std::vector<int>& members) const {
  GroupLayout layout;
  layout.members = members;
  for (int r : members) {
    layout.node_of.push_back(cluster_.devices[r].node);
    layout.region_of.push_back(cluster_.devices[r].region);
  }
  return layout;
}

ProtocolTable Simulation::protocols_of(const std::vector<int>& members) const {
  ProtocolTable table{};
  for (size_t p = 0; p < table.size(); ++p) {
    ProtocolCosts& t = table[p];
    for (size_t i = 0; i < members.size(); ++i) {
      const ProtocolCosts& c =
          cluster_.devices[members[i]].spec->efficiency.collective_protocols[p];
      t.base = std::max(t.base, c.base);
      t.intra_node_step = std::max(t.intra_node_step, c.intra_node_step);
      t.network_step = std::max(t.network_step, c.network_step);
      t.bandwidth_fraction =
          i == 0 ? c.bandwidth_fraction : std::min(t.bandwidth_fraction, c.bandwidth_fraction);
    }
  }
  return table;
}

Duration Simulation::p2p_protocol_cost(int src, int dst, Bytes bytes) {
  const std::vector<int> pair{src, dst};
  const GroupLayout layout = layout_of(pair);
  const AlphaBeta ab = alpha_beta(layout);
  const Duration bandwidth = estimate_bandwidth_time(CollectiveOp::kSendRecv,
                                                    CollectiveAlgorithm::kDirect, layout, bytes,
                                                    {}, ab);
  return choose_protocol(CollectiveOp::kSendRecv, CollectiveAlgorithm::kDirect, layout, bytes, {},
                         ab.protocols, bandwidth)
      .cost;
}

AlphaBeta Simulation::alpha_beta(const GroupLayout& layout) {
  // For each level, the first pair of members that differs at that level (and not at a
  // higher one) stands for the level: builders make levels uniform within a cluster.
  AlphaBeta ab;
  bool have_intra = false, have_inter = false, have_region = false;
  const auto& m = layout.members;
  for (size_t i = 1; i < m.size(); ++i) {
    const VertexId a = cluster_.devices[m[0]].vertex;
    const VertexId b = cluster_.devices[m[i]].vertex;
    if (!have_region && layout.region_of[i] != layout.region_of[0]) {
      ab.inter_region_alpha = router_.route_latency(a, b);
      ab.inter_region_bw = router_.route_bottleneck(a, b);
      have_region = true;
    } else if (!have_inter && layout.region_of[i] == layout.region_of[0] &&
               layout.node_of[i] != layout.node_of[0]) {
      ab.inter_node_alpha = router_.route_latency(a, b);
      ab.inter_node_bw = router_.route_bottleneck(a, b);
      have_inter = true;
    } else if (!have_intra && layout.node_of[i] == layout.node_of[0]) {
      ab.intra_node_alpha = router_.route_latency(a, b);
      ab.intra_node_bw = router_.route_bottleneck(a, b);
      have_intra = true;
    }
  }
  // Levels the group does not span take the next level's figures, so that estimates
  // never divide by a zero bandwidth.
  if (!have_inter && have_region) {
    ab.inter_node_alpha = ab.inter_region_alpha;
    ab.inter_node_bw = ab.inter_region_bw;
  }
  if (!have_intra) {
    ab.intra_node_alpha = ab.inter_node_alpha;
    ab.intra_node_bw = ab.inter_node_bw;
  }
  if (!have_inter && !have_region) {
    ab.inter_node_alpha = ab.intra_node_alpha;
    ab.inter_node_bw = ab.intra_node_bw;
  }
  if (!have_region) {
    ab.inter_region_alpha = ab.inter_node_alpha;
    ab.inter_region_bw = ab.inter_node_bw;
  }
  ab.protocols = protocols_of(m);
  return ab;
}

}  // namespace dtsim
