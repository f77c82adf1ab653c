// The plan grid of a training scenario as scenario documents: one per (tp, pp) pair that
// models::plan_grid admits on its cluster, for `dtsim plans` and the GUI's plan grid.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/plan_grid.h"
#include "scenarios/scenario.h"

namespace dtsim {

// The largest tensor-parallel group that stays inside every node: the greatest common
// divisor of the node groups' devices per node.
int devices_per_node_of(const ClusterSpec& cluster);

// The (tp, pp) pairs for a loaded training scenario (none for other workloads).
std::vector<models::PlanPoint> plan_points(const Scenario& scenario);

// `document` with parallelism.tp and .pp set, dp derived (an explicit dp is dropped), what
// was written for the scenario's own plan dropped (a rank map; explicit lists of TP shares,
// stage layers and replica micro-batches), and training.micro_batch set when `micro_batch`
// is given. Anything else the new plan does not admit, lowering reports.
template <typename Json>
Json plan_variant(Json document, const models::PlanPoint& point,
                  std::optional<int> micro_batch = {}) {
  auto& p = document["parallelism"];
  p["tp"] = point.tp;
  p["pp"] = point.pp;
  if (p.contains("dp")) p.erase("dp");
  if (p.contains("rank_map")) p.erase("rank_map");
  for (const char* key : {"tp_shares", "stage_layers", "replica_micro_batch"}) {
    if (p.contains(key) && p[key].is_array()) p.erase(key);
  }
  if (micro_batch) document["training"]["micro_batch"] = *micro_batch;
  return document;
}

}  // namespace dtsim
