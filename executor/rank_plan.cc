// plan_rank: the graph's tasks of one rank, queued per stream, with in-rank dependencies.
#include "executor/rank_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace dtsim::executor {

RankPlan plan_rank(const TaskGraph& graph, int rank) {
  RankPlan plan;
  plan.rank = rank;
  std::unordered_map<TaskId, uint32_t> local_of;
  std::unordered_map<uint16_t, size_t> queue_of;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskView t = graph.task(id);
    if (t.rank != rank) continue;
    const auto local = static_cast<uint32_t>(plan.tasks.size());
    plan.tasks.push_back(id);
    local_of.emplace(id, local);
    auto [q, added] = queue_of.try_emplace(t.stream, plan.queues.size());
    if (added) {
      plan.queues.emplace_back();
      plan.queue_stream.push_back(t.stream);
    }
    plan.queues[q->second].push_back(local);
    plan.deps.push_back(0);
    plan.dependents.emplace_back();
    for (TaskId d : t.deps) {
      const auto it = local_of.find(d);
      if (it == local_of.end()) {
        const TaskView other = graph.task(d);
        throw std::invalid_argument(
            "task " + std::to_string(id) + " (\"" + std::string(t.name) + "\", rank " +
            std::to_string(rank) + ") depends on task " + std::to_string(d) + " (\"" +
            std::string(other.name) + "\") of rank " + std::to_string(other.rank) +
            ": a real rank waits for another only through a send, a recv or a collective");
      }
      ++plan.deps[local];
      plan.dependents[it->second].push_back(local);
    }
  }
  return plan;
}

int graph_ranks(const TaskGraph& graph) {
  int ranks = 0;
  for (TaskId id = 0; id < graph.num_tasks(); ++id)
    ranks = std::max(ranks, graph.task(id).rank + 1);
  for (const CollectiveCall& c : graph.collectives()) {
    for (int m : c.members) ranks = std::max(ranks, m + 1);
  }
  return ranks;
}

}  // namespace dtsim::executor
