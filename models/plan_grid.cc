// Enumerating the plan grid.
#include "models/plan_grid.h"

#include <algorithm>

namespace dtsim::models {

std::vector<PlanPoint> plan_grid(const ModelSpec& model, const ParallelPlan& base, int ranks,
                                 int max_tp) {
  std::vector<PlanPoint> out;
  const int cp = std::max(1, base.cp);
  if (ranks < 1 || ranks % cp != 0) return out;
  const bool transformer = is_transformer(model.family);
  for (int tp = 1; tp <= max_tp && tp <= ranks; ++tp) {
    if (max_tp % tp != 0 || (ranks / cp) % tp != 0) continue;
    if (tp > 1 && !transformer && model.family != ModelFamily::kClassifier) continue;
    if (tp > 1 && transformer && (model.heads % tp != 0 || model.kv_heads_or_heads() % tp != 0))
      continue;
    const int rest = ranks / cp / tp;
    for (int pp = 1; pp <= rest; ++pp) {
      if (rest % pp != 0 || (model.layers > 0 && pp > model.layers)) continue;
      const int dp = rest / pp;
      // The expert layers regroup a stage's tp x cp x dp ranks as etp x ep x edp.
      const int etp = base.etp > 0 ? base.etp : tp;
      if ((tp * cp * dp) % (etp * std::max(1, base.ep)) != 0) continue;
      out.push_back({tp, pp, dp});
    }
  }
  return out;
}

}  // namespace dtsim::models
