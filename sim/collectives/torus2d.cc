// 2D-torus all-reduce (Mikami et al. 2018, "Massively Distributed SGD: ImageNet/ResNet-50
// Training in a Flash"): ring reduce-scatter along X, ring all-reduce along Y on 1/X of the
// data, ring all-gather along X.
#include <string>
#include <utility>

#include "sim/collectives/plan_util.h"

namespace dtsim::collective_detail {

TorusGrid torus_grid(const GroupLayout& layout, const CollectiveOptions& options) {
  TorusGrid grid{options.torus_x, options.torus_y, ""};
  const auto dims = [](int x, int y) { return std::to_string(x) + "x" + std::to_string(y); };
  if (grid.x < 0 || grid.y < 0) {
    grid.error = "torus2d grid " + dims(grid.x, grid.y) + " has a negative dimension";
    return grid;
  }
  if ((grid.x == 0) != (grid.y == 0)) {
    grid.error =
        "torus2d needs both torus_x and torus_y, or neither (got " + dims(grid.x, grid.y) + ")";
    return grid;
  }
  if (grid.x == 0) {
    // Default grid: a row per node. Rows are nodes when members are listed node by node,
    // as the cluster numbers ranks; otherwise the grid is still valid, only not aligned.
    const auto nodes = group_by(layout.node_of);
    const std::string uneven = uneven_groups(nodes, layout.node_of, "node");
    if (!uneven.empty()) {
      grid.error =
          "torus2d without torus_x/torus_y takes X = members per node and needs the "
          "same number of members on every node (" +
          uneven + ")";
      return grid;
    }
    grid.x = static_cast<int>(nodes.front().size());
    grid.y = static_cast<int>(nodes.size());
  }
  const int64_t p = static_cast<int64_t>(layout.members.size());
  if (static_cast<int64_t>(grid.x) * grid.y != p) {
    grid.error = "torus2d grid " + dims(grid.x, grid.y) + " does not match " + std::to_string(p) +
                 (p == 1 ? " rank" : " ranks");
  }
  return grid;
}

TwoLevelRings torus_rings(const TorusGrid& grid) {
  // Member i sits at (x = i % X, y = i / X): row y is an X ring, column x a Y ring.
  std::vector<std::vector<int>> rows(static_cast<size_t>(grid.y));
  for (int y = 0; y < grid.y; ++y) {
    for (int x = 0; x < grid.x; ++x) rows[static_cast<size_t>(y)].push_back(y * grid.x + x);
  }
  return two_level_rings(std::move(rows));
}

// Rows play the part of nodes in the two-level shape: RS along X moves ceil(n/X) per step
// (X-1 steps), AR along Y ceil(n/X/Y) = ceil(n/p) (2(Y-1) steps), AG along X (X-1 steps).
void plan_torus2d(CollectivePlan& plan, const TorusGrid& grid) {
  plan_two_level(plan, torus_rings(grid));
}

}  // namespace dtsim::collective_detail
