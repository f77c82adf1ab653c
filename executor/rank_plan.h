// One rank's part of a TaskGraph, arranged for running it for real: its tasks in graph
// order, each stream's queue, and the dependency counts a scheduler releases tasks by.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/task_graph.h"

namespace dtsim::executor {

struct RankPlan {
  int rank = 0;
  std::vector<TaskId> tasks;  // local index -> the graph's task id, in id order
  // One queue per stream this rank uses: local indices in the order the stream runs them.
  std::vector<std::vector<uint32_t>> queues;
  std::vector<uint16_t> queue_stream;             // the graph's stream index of each queue
  std::vector<uint32_t> deps;                     // per local index: how many tasks it waits for
  std::vector<std::vector<uint32_t>> dependents;  // per local index: who waits for it
};

// Throws std::invalid_argument for a task that depends on another rank's task: a real rank
// can wait for another only through a message (a send, a recv or a collective call).
RankPlan plan_rank(const TaskGraph& graph, int rank);

// Ranks of a graph: one past the highest rank any task or collective member names.
int graph_ranks(const TaskGraph& graph);

}  // namespace dtsim::executor
