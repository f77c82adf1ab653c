// A loaded scenario: the validated, typed form of a scenario JSON file (see
// docs/scenario-format.md), with its cluster built and its workload lowered to a TaskGraph.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cluster_spec.h"
#include "sim/collectives/collective_plan.h"
#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim {

enum class WorkloadKind { kCollective, kTaskGraph };

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
  TaskGraph graph;             // the workload as tasks (both kinds)
};

}  // namespace dtsim
