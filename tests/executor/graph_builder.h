// Small TaskGraphs for the executor's tests: tasks added by kind, rank, stream and deps.
#pragma once

#include <string>
#include <vector>

#include "sim/task_graph.h"

namespace dtsim::executor::testing {

inline TaskId add_task(TaskGraph& g, TaskKind kind, int rank, const std::string& stream,
                       const std::string& name, std::vector<TaskId> deps = {}) {
  Task t;
  t.kind = kind;
  t.rank = rank;
  t.stream = g.stream(stream);
  t.name = name;
  t.deps = std::move(deps);
  return g.add(t);
}

inline TaskId add_compute(TaskGraph& g, int rank, const std::string& stream,
                          const std::string& name, std::vector<TaskId> deps = {}) {
  return add_task(g, TaskKind::kCompute, rank, stream, name, std::move(deps));
}

}  // namespace dtsim::executor::testing
