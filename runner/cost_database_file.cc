// The cost database's file through the strict reader (runner/cost_database_file.h).
#include "runner/cost_database_file.h"

#include <optional>
#include <vector>

#include "scenarios/json_document.h"

namespace dtsim {

calibration::CostDatabase read_cost_database_file(const std::string& path) {
  std::string error;
  const std::optional<std::string> text = read_input_file(path, error);
  if (!text) throw InputError(path, {{"", "cannot read the cost database: " + error}});
  std::vector<InputProblem> problems;
  const std::optional<nlohmann::json> document = parse_json_strictly(*text, problems);
  if (!document) {
    // A database is written whole or not at all: one that does not read was not written by
    // `dtsim calibrate`.
    problems.back().message += "; this is not a cost database `dtsim calibrate` wrote";
    throw InputError(path, problems);
  }
  return calibration::cost_database_from_json(*document, path);
}

}  // namespace dtsim
