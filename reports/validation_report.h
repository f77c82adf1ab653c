// The validation report: every scenario with a published `reference`, run and compared
// (runner/validation_cases.h runs them);
// rows of (case, metric, reference, predicted, signed relative error) with their median
// and worst, written as docs/validation.md and docs/validation.json.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim {

struct ValidationRow {
  std::string scenario;  // the file
  std::string name;      // the case
  std::string source;
  std::string metric;
  double reference = 0;
  double predicted = 0;
  double error = 0;  // (predicted - reference) / reference
};

// The accuracy dtsim aims for on published results (issue 3): median |error| at most 10%,
// none worse than 25%.
inline constexpr double kTargetMedianError = 0.10;
inline constexpr double kTargetWorstError = 0.25;

double median_abs_error(const std::vector<ValidationRow>& rows);
double worst_abs_error(const std::vector<ValidationRow>& rows);

nlohmann::ordered_json validation_json(const std::vector<ValidationRow>& rows);
// `command` is how the report was produced, quoted in it so that anyone can rerun it.
std::string validation_markdown(const std::vector<ValidationRow>& rows, const std::string& command);

}  // namespace dtsim
