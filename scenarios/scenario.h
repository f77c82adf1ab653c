// A loaded scenario: the validated, typed form of a scenario JSON file (see
// docs/scenario-format.md), with its cluster built. Its workload is a specification: the
// caller lowers it with the cost model it chooses (scenarios/scenario_lowering.h).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/lowering.h"
#include "models/scenario_result.h"
#include "sim/cluster_spec.h"
#include "sim/collectives/collective_plan.h"
#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim {

enum class WorkloadKind { kCollective, kTaskGraph, kTraining };

// A training step as the scenario gives it: model, set-up and plan, checked but not lowered.
struct TrainingSpec {
  models::ModelSpec model;
  models::TrainingSetup training;
  models::ParallelPlan plan;
  // The key training.batch_phases came from: "batch_phases", or "batch_rampup" (Megatron's).
  std::string batch_schedule_key = "batch_phases";
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
  // Which cost model prices the ops: "roofline", or the measured model over the cost
  // database in `costs_file` (relative paths resolved against the scenario's folder).
  std::string cost_model = "roofline";
  std::optional<std::string> costs_file;
  // Training scenarios: how finely compute tasks cut a pass (models::Granularity).
  models::Granularity granularity = models::Granularity::kChunk;
  // Not a scenario key: dtsim validate runs every rank on this machine's one CPU, whatever
  // nodes the scenario names (SimulationOptions::ranks_share_one_cpu).
  bool ranks_share_one_cpu = false;
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
  CollectiveSweep collective;            // for kCollective
  std::optional<TrainingSpec> training;  // for kTraining
  // For kTaskGraph: the tasks as given. Compute tasks priced by FLOPs carry one op of
  // unknown shape and no duration yet: lowering prices them with the chosen cost model.
  TaskGraph task_graph;
  // A lowered graph read from a file keeps the durations it holds unless the scenario asks
  // for its ops to be priced again (workload.reprice).
  bool reprice_task_graph = false;
  // A lowered local SGD step (workload.local_graph_file): the iteration that runs
  // sync_every - 1 times for each run of task_graph, the one that synchronizes.
  std::optional<TaskGraph> local_task_graph;
  int sync_every = 1;
  std::optional<Reference> reference;
};

// The ranks a trace of the scenario records (0 .. n - 1): simulation.trace_ranks, else a
// training step's first 64 (a trace of thousands of ranks is more than a reader can look
// at), else every rank.
inline int trace_ranks(const Scenario& s) {
  const int ranks = s.cluster.num_ranks();
  return s.simulation.trace_ranks.value_or(s.training ? std::min(64, ranks) : ranks);
}

}  // namespace dtsim
