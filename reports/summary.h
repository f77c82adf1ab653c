// summary.json: the headline figures of a run, and the readable text the CLI prints.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/scenario_result.h"

namespace dtsim {

struct SummaryOptions {
  // Host wall time differs between runs; leave it out for byte-identical outputs.
  bool include_wall_time = true;
  int busiest_links = 10;
};

// The "cost_sources" section: per source (measured, interpolated, extrapolated, roofline)
// the kernels of every rank's compute tasks, their summed time and its share of all compute
// time; kernel launches and the durations the scenario gave, likewise.
nlohmann::ordered_json cost_sources_json(const CostTally& tally);

nlohmann::ordered_json make_summary(const LoweredScenario& scenario, const ScenarioRun& run,
                                    const SummaryOptions& options = {});
std::string format_summary_text(const nlohmann::ordered_json& summary);

}  // namespace dtsim
