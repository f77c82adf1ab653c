// Parsing the built-in scenario schema once.
#include "gui/scenario_schema.h"

namespace dtsim::gui {

extern const char kScenarioSchemaText[];  // generated from the schema file by CMake

const nlohmann::ordered_json& scenario_schema() {
  static const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(kScenarioSchemaText);
  return schema;
}

}  // namespace dtsim::gui
