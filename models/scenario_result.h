// What the writers (reports/) read of a scenario: how its workload was lowered and what
// its simulation measured. These live below reports/ so that writers never load or run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/lowering.h"
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
  std::string metric;  // a key of the summary's "training" section, e.g. "iteration_time_s"
  double value = 0;
  std::string note;
};

// A training step: model, set-up and plan, lowered (the graph itself is the scenario's).
struct TrainingWorkload {
  models::ModelSpec model;
  models::TrainingSetup training;
  models::LoweredStep step;  // the iteration that synchronizes across regions
  // With parallelism.sync_every > 1 (local SGD across regions): an iteration that reduces
  // gradients inside each region only; the reported iteration time averages the two.
  std::optional<models::LoweredStep> local_step;
  models::Granularity granularity = models::Granularity::kChunk;  // how its passes are cut
};

// A scenario's workload lowered to a TaskGraph with a chosen cost model.
struct LoweredScenario {
  std::string source;  // the scenario file (or "<string>")
  std::string name;
  std::string network_model;
  const Cluster* cluster = nullptr;  // the scenario's, which outlives this
  const Cluster& cluster_ref() const { return *cluster; }
  TaskGraph graph;                           // every kind of workload
  std::optional<TrainingWorkload> training;  // training scenarios (graph is the step's)
  std::optional<Reference> reference;
  std::string cost_model;  // the name of the model that priced the ops
  CostTally costs;         // the graph's compute tasks, by where their times came from
  bool cancelled = false;  // the lowering was stopped; nothing else here is whole
};

struct ScenarioRun {
  RunResult result;
  // Training with local SGD across regions: the run of an iteration that synchronizes only
  // inside each region (observers see the synchronizing iteration only).
  std::optional<RunResult> local_step;
  double wall_time_s = 0;        // host time spent in the simulation proper
  std::vector<LinkStats> links;  // indexed by LinkId, closed at the end of the run
};

}  // namespace dtsim
