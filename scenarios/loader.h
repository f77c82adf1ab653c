// The scenario loader: JSON (plus --set overrides) in, a validated Scenario out, or every
// problem in the input at once (docs/scenario-format.md is the format's specification).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/input_error.h"

#include <nlohmann/json.hpp>

#include "scenarios/scenario.h"

namespace dtsim {

// Every problem in the input, one line each: "<source>: <json pointer>: <what is wrong, and
// what was expected>" (problems of the whole document omit the pointer; problems with an
// override name it as "--set <assignment>").
class ScenarioError : public InputError {
 public:
  using InputError::InputError;
};

// Reads `path`, applies the overrides ("a.b.c=VALUE", in order), validates and builds the
// cluster; the workload stays a specification until it is lowered
// (scenarios/scenario_lowering.h). Throws ScenarioError, also for a missing or unreadable
// file and for invalid JSON (with line and column).
Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides = {});
// The same for a document already parsed; `source` names it in messages.
Scenario load_scenario(nlohmann::json document, const std::string& source,
                       const std::vector<std::string>& overrides = {});

// Applies one override ("cluster.nodes.0.count=64") to `document`. Path segments name object
// keys (created when missing) or array indices (0..size, where size appends). VALUE is
// read as JSON when it parses as JSON, else taken as a string. Returns "" or what is wrong.
std::string apply_override(nlohmann::json& document, std::string_view assignment);

// Lowers a collective sweep to a TaskGraph: for each op, algorithm, size and iteration one
// collective call over the group, with one task per member on stream "comm"; calls run one
// after another since each rank's tasks run in order on its stream. Labels read
// "<op>/<algorithm>/<bytes>B#<iteration>" (iterations count from 0).
TaskGraph build_collective_sweep_graph(const CollectiveSweep& sweep);

}  // namespace dtsim
