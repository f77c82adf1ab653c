// A Simulation: one engine, one cluster's router, network and compute models, and the
// observers. Everything lives in the instance, so several can run in one process.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/collective_cost_model.h"
#include "sim/collectives/planner.h"
#include "sim/compute_model.h"
#include "sim/engine.h"
#include "sim/network_model.h"
#include "sim/observer.h"
#include "sim/router.h"
#include "sim/run_control.h"
#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim {

struct SimulationOptions {
  std::string network_model = "flow";
  // Lets the network model skip repeated rounds that nothing else can disturb. The result
  // is the same either way (tests check it); false costs the time of every round.
  bool fast_forward = true;
  // Lets the flow model replay a collective phase that ran alone on its links before
  // (FlowNetworkModel, PHASE REPLAY) when nothing else can happen until it ends. The same
  // result either way (tests check it).
  bool phase_replay = true;
  // Lets the flow model run a flow that is alone on its links outside the max-min solver
  // (FlowNetworkModel, LONE FLOWS). The same result either way (tests check it).
  bool lone_flows = true;
  // Lets the flow model's max-min solver settle a flow's end or start without solving its
  // component when no other rate can change (MaxMinSolver, LOCAL CHANGES). The same
  // result either way (tests check it).
  bool solver_local_changes = true;
  // Prices the collective calls it measured (over a group of one device kind), and the
  // pipeline send/recv pairs as send/recv calls over the pair, in place of the network
  // model: such a call takes the measured time and moves no flows, so it does not contend
  // with other traffic beyond what its measurement held. Not owned; may be null.
  const CollectiveCostModel* collective_costs = nullptr;
  // Crowded kernels (Crowding: a CPU's, timed beside co-runners) slow by the other ranks
  // of their node that compute meanwhile; with this, by every rank's: a real run on one
  // machine (dtsim validate) packs the scenario's nodes onto its one CPU.
  bool ranks_share_one_cpu = false;
};

// Where one rank's time went. At every instant a rank is in exactly one of: compute (a
// kernel runs), exposed communication (a transfer of its own runs and no kernel does),
// waiting (a collective or send/recv is issued but its peers have not all arrived), or
// idle (nothing issued); these four add up to the run's length. `communication` is all the
// time a transfer of the rank runs, overlapped with compute or not.
struct RankStats {
  Duration compute;
  Duration communication;
  Duration exposed_communication;
  Duration waiting;
  // The part of `waiting` spent only in send/recv rendezvous: a pipeline stage waiting
  // for its neighbour's activations or gradients (the pipeline bubble).
  Duration waiting_p2p;
  Duration idle;
  int64_t tasks = 0;
  Bytes peak_memory;
  Bytes memory_capacity;
  bool out_of_memory = false;
};

struct RunResult {
  Time end;
  uint64_t events = 0;
  int64_t fast_forwarded_rounds = 0;
  int64_t replayed_phases = 0;
  std::optional<MaxMinSolveCounts> max_min;  // the `flow` model's solves
  std::vector<RankStats> ranks;
  std::vector<CollectiveRecord> collectives;  // in completion order
  // Collective calls and pipeline send/recv pairs by where their time came from:
  // SimulationOptions::collective_costs (measured, interpolated or extrapolated; the
  // roofline slot stays 0), or the network model (simulated, or the alpha-beta estimate
  // for analytical calls).
  std::array<int64_t, kAllCostSources.size()> priced_collectives{};
  int64_t network_collectives = 0;
  std::vector<MemoryOverflowRecord> memory_overflows;
  // Tasks that never ran (a dependency cycle through rendezvous, a collective whose
  // members wait on each other): one sentence each; empty when everything completed or
  // the run was cancelled.
  std::vector<std::string> stalled;
  // Stopped through RunControl::stop before the end: the figures cover what ran.
  bool cancelled = false;
};

class Simulation {
 public:
  // Throws std::invalid_argument when the network model name is unknown.
  Simulation(const Cluster& cluster, const SimulationOptions& options);
  ~Simulation();

  void add_observer(SimObserver* observer) { observers_.add(observer); }
  // Runs the graph to completion, or until `control` asks it to stop; a Simulation runs
  // one graph. Progress counts finished tasks.
  RunResult run(const TaskGraph& graph, const RunControl& control = {});
  // The most that run() holds at once for a graph of `counts` on `ranks` ranks with
  // `streams` streams each (its per-task state, the dependents, every call's record),
  // beyond the graph itself; `observed`: with observers, which keep each task's start.
  static double peak_bytes_for(const TaskGraphCounts& counts, int ranks, size_t streams,
                               bool observed);
  // What the network holds while it runs `graph`: its per-link state, the plans of the
  // graph's calls (planned here, each distinct call once, as the run keeps them), their
  // cached routes and the flows of their largest phase. Without a graph (a training step,
  // estimated before it is built), the per-link state only. Routes this Simulation.
  double network_bytes_for(const TaskGraph* graph);

  const Cluster& cluster() const { return cluster_; }
  Engine& engine() { return engine_; }
  Router& router() { return router_; }
  const NetworkModel& network() const { return *network_; }
  // Alpha-beta figures of the links a group spans, measured on its routes (for `auto`).
  AlphaBeta alpha_beta(const GroupLayout& layout);
  // What the library adds to one send/recv of `bytes` from rank `src` to rank `dst`: a call
  // of one hop, with the protocol that finishes it first (see choose_protocol). Callers
  // cache it: it measures the route.
  Duration p2p_protocol_cost(int src, int dst, Bytes bytes);
  GroupLayout layout_of(const std::vector<int>& members) const;

 private:
  friend class TaskRuntime;
  const Cluster& cluster_;
  Engine engine_;
  ObserverList observers_;
  Router router_;
  std::unique_ptr<NetworkModel> network_;
  ComputeModel compute_;
  const CollectiveCostModel* collective_costs_ = nullptr;
  bool ranks_share_one_cpu_ = false;
  bool ran_ = false;
};

}  // namespace dtsim
