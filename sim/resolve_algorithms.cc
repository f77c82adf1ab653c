// Auto algorithms settled by the simulation's own choice, one choice per distinct call.
#include "sim/resolve_algorithms.h"

#include <map>
#include <tuple>
#include <vector>

#include "sim/group_links.h"

namespace dtsim {

void resolve_auto_algorithms(TaskGraph& graph, const Cluster& cluster) {
  Router router(cluster.topology);
  // Calls of one group share its layout and figures; the choice also depends on the op,
  // the size and the options it reads.
  std::map<std::vector<int>, std::pair<GroupLayout, AlphaBeta>> groups;
  std::map<std::tuple<int, int64_t, int64_t, int, int, int, const std::vector<int>*>,
           CollectiveAlgorithm>
      chosen;
  for (uint32_t id = 0; id < graph.collectives().size(); ++id) {
    const CollectiveCall& call = graph.collectives()[id];
    if (call.algorithm != CollectiveAlgorithm::kAuto) continue;
    if (call.members.size() <= 1) {
      graph.set_collective_algorithm(id, algorithms_for(call.op).front());
      continue;
    }
    auto g = groups.find(call.members);
    if (g == groups.end()) {
      GroupLayout layout = group_layout(cluster, call.members);
      const AlphaBeta ab = group_alpha_beta(cluster, router, layout);
      g = groups.emplace(call.members, std::pair{std::move(layout), ab}).first;
    }
    const CollectiveOptions& o = call.options;
    const Bytes one = call.bytes_per_call();
    const auto key = std::tuple{static_cast<int>(call.op),
                                one.count(),
                                o.chunk_bytes.count(),
                                o.torus_x,
                                o.torus_y,
                                o.root,
                                &g->first};
    auto c = chosen.find(key);
    if (c == chosen.end()) {
      c = chosen.emplace(key, choose_algorithm(call.op, g->second.first, one, o, g->second.second))
              .first;
    }
    graph.set_collective_algorithm(id, c->second);
  }
}

}  // namespace dtsim
