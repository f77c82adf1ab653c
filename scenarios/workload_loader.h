// The `workload` section, in two steps: read (types, units, names; needs no cluster) and
// resolve (ranks, groups, applicability; needs the built cluster), so that a broken cluster
// still lets the workload's own mistakes be reported without a cascade of rank errors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scenarios/json_reader.h"
#include "scenarios/rank_set.h"
#include "scenarios/scenario.h"

namespace dtsim::scenario_detail {

// Workloads beyond this many tasks would take gigabytes before the simulation starts.
inline constexpr int64_t kMaxTasks = 50'000'000;

struct SweepSpec {
  std::string pointer;
  std::vector<CollectiveOp> ops;
  std::vector<std::string> op_pointers;
  std::vector<CollectiveAlgorithm> algorithms;
  std::vector<std::string> algorithm_pointers;  // empty when `algorithms` was not given
  std::vector<Bytes> sizes;
  std::optional<RankSetSpec> group;  // nullopt: "all"
  int iterations = 1;
  CollectiveOptions options;
  bool valid = false;  // every key read without errors
};

// One entry of `collectives`: a definition that each collective task instantiates.
struct CollectiveDef {
  std::string pointer;
  std::string name;
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  bool algorithm_given = false;
  std::optional<RankSetSpec> group;  // nullopt: "all"
  Bytes bytes;
  CollectiveOptions options;
  DType dtype = DType::kBf16;
  ReduceOp reduce = ReduceOp::kSum;
  bool valid = false;
};

struct TaskDep {
  size_t task = 0;  // index into TaskGraphSpec::tasks, always an earlier entry
  std::string pointer;
};

// One entry of `tasks`, before replication over its ranks.
struct TaskSpec {
  std::string pointer;
  std::string ranks_pointer;  // the "rank" or "ranks" key
  std::string id;
  RankSetSpec ranks;
  Task prototype;  // kind, stream name (below), kind-specific fields; rank and deps unset
  std::string stream;
  std::optional<size_t> collective;  // index into TaskGraphSpec::collectives
  // compute: FLOPs of a GEMM in `dtype`, priced when the scenario is lowered (in place of
  // prototype.duration).
  std::optional<Flops> flops;
  DType dtype = DType::kFp32;
  bool dtype_given = false;
  std::vector<TaskDep> deps;
  bool valid = false;
};

struct TaskGraphSpec {
  // A lowered-graph file (relative paths resolved against the scenario's folder) in place
  // of tasks and collectives; with `reprice`, lowering prices its compute tasks' ops again
  // with the chosen cost model instead of keeping the durations in the file.
  std::optional<std::string> graph_file;
  std::string graph_file_pointer;
  bool reprice = false;
  // Local SGD: the lowered local step, run sync_every - 1 times for each run of graph_file.
  std::optional<std::string> local_graph_file;
  std::string local_graph_file_pointer;
  int sync_every = 1;
  std::string tasks_pointer;
  std::vector<CollectiveDef> collectives;
  std::vector<TaskSpec> tasks;
};

struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kCollective;
  SweepSpec sweep;
  TaskGraphSpec graph;
};

// nullopt when the section is not an object or has no valid kind (reported).
std::optional<WorkloadSpec> read_workload(const json& value, const std::string& pointer,
                                          Diagnostics& d);
// Checks ranks, groups and algorithms against `cluster` and fills the scenario's
// workload_kind, collective and graph.
void resolve_workload(const WorkloadSpec& spec, const Cluster& cluster, Diagnostics& d,
                      Scenario& out);

// The two kinds (collective_workload.cc, task_graph_loader.cc).
SweepSpec read_sweep(JsonObject& o);
void resolve_sweep(const SweepSpec& spec, const Cluster& cluster, Diagnostics& d,
                   CollectiveSweep& out);
TaskGraphSpec read_task_graph(JsonObject& o);
// Builds the graph as given: a compute task priced by FLOPs carries one op signature (a GEMM
// of unknown shape named after the task) and no duration until lowering prices it.
void resolve_task_graph(const TaskGraphSpec& spec, const Cluster& cluster, Diagnostics& d,
                        TaskGraph& out);
// A lowered-graph file, read and validated against `cluster`; problems are reported at
// `pointer`, naming the file.
std::optional<TaskGraph> read_graph_file(const std::string& path, const std::string& pointer,
                                         const Cluster& cluster, Diagnostics& d);

}  // namespace dtsim::scenario_detail
