// ranks.csv (where each rank's time and memory went) and links.csv (per-link traffic).
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "models/scenario_result.h"

namespace dtsim {

// A CSV field, quoted (RFC 4180) when it holds a comma, a quote or a line break.
std::string csv_field(std::string_view s);

void write_ranks_csv(std::ostream& out, const LoweredScenario& scenario, const ScenarioRun& run);
// Only links that carried traffic are listed; the rest carried nothing.
void write_links_csv(std::ostream& out, const LoweredScenario& scenario, const ScenarioRun& run);

}  // namespace dtsim
