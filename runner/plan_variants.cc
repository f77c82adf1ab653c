// The plan grid of a loaded scenario.
#include "runner/plan_variants.h"

#include <numeric>

namespace dtsim {

int devices_per_node_of(const ClusterSpec& cluster) {
  int g = 0;
  for (const RegionSpec& region : cluster.regions) {
    for (const NodeGroupSpec& group : region.node_groups) g = std::gcd(g, group.devices_per_node);
  }
  return std::max(1, g);
}

std::vector<models::PlanPoint> plan_points(const Scenario& scenario) {
  if (!scenario.training) return {};
  return models::plan_grid(scenario.training->model, scenario.training->plan,
                           scenario.cluster.num_ranks(),
                           devices_per_node_of(scenario.cluster_spec));
}

}  // namespace dtsim
