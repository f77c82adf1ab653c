// summary.json: the headline figures of a run, and the readable text the CLI prints.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.h"
#include "scenarios/scenario_runner.h"

namespace dtsim {

struct SummaryOptions {
  // Host wall time differs between runs; leave it out for byte-identical outputs.
  bool include_wall_time = true;
  int busiest_links = 10;
};

nlohmann::ordered_json make_summary(const Scenario& scenario, const ScenarioRun& run,
                                    const SummaryOptions& options = {});
std::string format_summary_text(const nlohmann::ordered_json& summary);

}  // namespace dtsim
