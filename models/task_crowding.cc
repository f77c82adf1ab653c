// A task's alone fraction: its kernels' times alone over their times beside co-runners,
// each with its launch, summed over the task's op list.
#include "models/task_crowding.h"

#include <algorithm>
#include <map>
#include <utility>

#include "models/chunk_cost.h"

namespace dtsim::models {

void set_task_crowding(const Cluster& cluster, const CostModel& costs, TaskGraph& graph) {
  if (!costs.prices_crowding()) return;
  std::map<std::pair<OpListId, const DeviceSpec*>, Crowding> by_list;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskView t = graph.task(id);
    if (t.kind != TaskKind::kCompute || t.ops == kNoOps) continue;
    const DeviceSpec* device = cluster.devices[static_cast<size_t>(t.rank)].spec;
    auto [it, fresh] = by_list.try_emplace({t.ops, device});
    if (fresh) {
      double crowded_s = 0;
      double alone_s = 0;
      int co_runners = 0;
      for (const OpSignature& op : graph.op_list(t.ops)) {
        const PricedOp p = price_op(op, *device, costs);
        crowded_s += p.total().seconds();
        // A kernel priced without co-runners (the roofline, an in-step time) takes the
        // same time alone: what it was measured or modelled with stays.
        alone_s += (p.cost.co_runners > 0 ? p.cost.alone : p.cost.time).seconds() + p.launch.seconds();
        co_runners = std::max(co_runners, p.cost.co_runners);
      }
      if (co_runners > 0 && crowded_s > 0) {
        it->second = {static_cast<float>(alone_s / crowded_s),
                      static_cast<uint16_t>(std::min(co_runners, 65535))};
      }
    }
    if (it->second.co_runners > 0) graph.set_crowding(id, it->second);
  }
}

}  // namespace dtsim::models
