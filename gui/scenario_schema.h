// The scenario schema (scenarios/schema/scenario.schema.json), built into the program so
// that the form matches the loader it was built with, wherever the program runs.
#pragma once

#include <nlohmann/json.hpp>

namespace dtsim::gui {

const nlohmann::ordered_json& scenario_schema();

}  // namespace dtsim::gui
