// A loaded scenario: the validated, typed form of a scenario JSON file (see
// docs/scenario-format.md), with its cluster built and its workload lowered to a TaskGraph.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/lowering.h"
#include "sim/cluster_spec.h"
#include "sim/collectives/collective_plan.h"
#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim {

enum class WorkloadKind { kCollective, kTaskGraph, kTraining };

// A published figure the scenario reproduces (scenarios/validation/): `dtsim run` prints
// the prediction next to it.
struct Reference {
  std::string source;
  std::string metric;  // a key of the summary's "training" section, e.g. "iteration_time_s"
  double value = 0;
  std::string note;
};

// A training step: model, set-up and plan, lowered to the scenario's TaskGraph.
struct TrainingWorkload {
  models::ModelSpec model;
  models::TrainingSetup training;
  models::LoweredStep step;  // the iteration that synchronizes across regions
  // With parallelism.sync_every > 1 (local SGD across regions): an iteration that reduces
  // gradients inside each region only; the reported iteration time averages the two.
  std::optional<models::LoweredStep> local_step;
};

// The nccl-tests-like sweep: every (op, algorithm, size) in turn, `iterations` times.
struct CollectiveSweep {
  std::vector<CollectiveOp> ops;
  std::vector<CollectiveAlgorithm> algorithms;
  std::vector<Bytes> sizes;
  std::vector<int> group;
  int iterations = 1;
  CollectiveOptions options;
};

struct SimulationSettings {
  std::string network_model = "flow";
  bool trace = true;
  // The trace holds ranks 0 .. trace_ranks - 1: their tasks, collective calls and node
  // links (all when unset).
  std::optional<int> trace_ranks;
  bool fast_forward = true;  // see SimulationOptions::fast_forward
};

struct Scenario {
  std::string source;  // the file it came from (or "<string>")
  std::string name;
  std::string description;
  nlohmann::json document;  // after --set overrides
  ClusterSpec cluster_spec;
  Cluster cluster;  // built from cluster_spec; owns custom device specs
  SimulationSettings simulation;
  WorkloadKind workload_kind = WorkloadKind::kCollective;
  CollectiveSweep collective;  // for kCollective
  std::optional<TrainingWorkload> training;  // for kTraining (graph is training->step.graph)
  std::optional<Reference> reference;
  TaskGraph graph;             // the workload as tasks (every kind)
};

}  // namespace dtsim
