// Reading a summary's headline figures.
#include "reports/headline_figures.h"

#include <set>

namespace dtsim {

double step_seconds(const nlohmann::ordered_json& summary) {
  if (summary.contains("training"))
    return summary.at("training").at("iteration_time_s").get<double>();
  return summary.at("simulated_time_s").get<double>();
}

HeadlineFigures headline_figures(const nlohmann::ordered_json& summary) {
  HeadlineFigures f;
  f.completed = summary.value("completed", true);
  f.step_s = step_seconds(summary);
  // A rank overflows at most once per simulated step; with local SGD both steps report.
  std::set<int> oom;
  for (const auto& o : summary.at("memory_overflows")) oom.insert(o.at("rank").get<int>());
  f.oom_ranks = static_cast<int>(oom.size());
  if (!summary.contains("training")) return f;
  const auto& t = summary.at("training");
  f.tokens_per_s = t.value("tokens_per_s", 0.0);
  f.mfu = t.value("mfu", 0.0);
  f.peak_bytes = t.value("max_peak_memory_bytes", 0.0);
  for (const auto& r : t.at("ranks")) {
    if (r.at("peak_memory_bytes").get<double>() >= f.peak_bytes) {
      f.capacity_bytes = r.at("memory_capacity_bytes").get<double>();
      break;
    }
  }
  return f;
}

}  // namespace dtsim
