// What the writers (reports/) read of a scenario: how its workload was lowered and what
// its simulation measured. These live below reports/ so that writers never load or run.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/lowering.h"
#include "sim/collective_cost_model.h"
#include "sim/cost_model.h"
#include "sim/link_stats.h"
#include "sim/simulation.h"
#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim {

// A published figure the scenario reproduces (scenarios/validation/): `dtsim run` prints
// the prediction next to it.
struct Reference {
  std::string source;
  // A key of the summary's "training" section, e.g. "iteration_time_s"; or
  // "collective_time_us" for a collective sweep measured size by size (`sizes`).
  std::string metric;
  double value = 0;
  std::string note;
  // collective_time_us: the published time of one call at each size, in increasing size.
  std::vector<std::pair<Bytes, double>> sizes;
  // False when the published run's software stack spends time that no sourced figure gives
  // (a framework's overheads of its day): the case is reported apart from the accuracy
  // target, with `stack_note` saying why.
  bool stack_modelled = true;
  std::string stack_note;
};

// A training step: model, set-up and plan, lowered (the graph itself is the scenario's).
struct TrainingWorkload {
  models::ModelSpec model;
  models::TrainingSetup training;
  models::LoweredStep step;  // the iteration that synchronizes across regions
  models::Granularity granularity = models::Granularity::kChunk;  // how its passes are cut
};

// A scenario's workload lowered to a TaskGraph with a chosen cost model.
// A link class whose figures came from a cost database's measured collectives instead of
// the catalog (runner/measured_links.h applies them to the cluster before lowering).
struct MeasuredLinkClass {
  std::string device;      // the device spec whose nodes use it
  std::string link_class;  // "intra_node"
  std::string library;     // the collective library measured ("Open MPI v4.1.4")
  int ranks = 0;
  Duration base;  // per call
  Duration hop;   // per hop one piece of data crosses
  Bandwidth bandwidth;
  double median_error = 0;  // the fit against its measurements
  double worst_error = 0;
};

struct LoweredScenario {
  std::string source;  // the scenario file (or "<string>")
  std::string name;
  std::string network_model;
  const Cluster* cluster = nullptr;  // the scenario's, which outlives this
  const Cluster& cluster_ref() const { return *cluster; }
  TaskGraph graph;  // every kind of workload
  // Local SGD across regions: the iteration that reduces gradients inside each region only,
  // run sync_every - 1 times for each run of `graph` (the one that synchronizes across
  // them). A training scenario with parallelism.sync_every > 1 lowers it; a task graph
  // brings it from its file (workload.local_graph_file).
  std::optional<TaskGraph> local_graph;
  int sync_every = 1;
  std::optional<TrainingWorkload> training;  // training scenarios (graph is the step's)
  // A batch-size schedule's steps at the smaller batches it simulates
  // (models::simulated_batches), each run like the step.
  struct PhaseGraph {
    int64_t global_batch = 0;
    TaskGraph graph;
  };
  std::vector<PhaseGraph> phase_graphs;
  std::optional<Reference> reference;
  std::string cost_model;  // the name of the model that priced the ops
  CostTally costs;         // the graph's compute tasks, by where their times came from
  std::vector<MeasuredLinkClass> measured_links;  // none: every link is the catalog's
  // Prices the collective calls a cost database measured (SimulationOptions::
  // collective_costs); null: the network model runs every call.
  std::shared_ptr<const CollectiveCostModel> collective_costs;
  bool cancelled = false;  // the lowering was stopped; nothing else here is whole
};

struct ScenarioRun {
  RunResult result;
  // Training with local SGD across regions: the run of an iteration that synchronizes only
  // inside each region (observers see the synchronizing iteration only).
  std::optional<RunResult> local_step;
  // The simulated step time of each of LoweredScenario::phase_graphs, in their order.
  std::vector<double> phase_steps_s;
  double wall_time_s = 0;        // host time spent in the simulation proper
  std::vector<LinkStats> links;  // indexed by LinkId, closed at the end of the run
};

// The mean iteration time: with local SGD, ((sync_every - 1) local + sync) / sync_every;
// otherwise the simulated step's.
inline double mean_iteration_seconds(const LoweredScenario& scenario, const ScenarioRun& run) {
  const double sync = run.result.end.seconds();
  if (!run.local_step) return sync;
  const double h = scenario.sync_every;
  return ((h - 1) * run.local_step->end.seconds() + sync) / h;
}

}  // namespace dtsim
