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
  // See Reference::stack_modelled: such a case is shown apart from the accuracy target.
  bool stack_modelled = true;
  std::string stack_note;
  // A collective case's row: the call's size and the algorithm the run used (0 and "" for a
  // training figure).
  int64_t bytes = 0;
  std::string algorithm;

  bool collective() const { return bytes > 0; }
};

// The accuracy dtsim aims for on published training figures whose software stack it
// models (issue 18): median |error| at most 5%, none worse than 12%, and no systematic bias
// (mean signed error within +-3%).
inline constexpr double kTargetMedianError = 0.05;
inline constexpr double kTargetWorstError = 0.12;
inline constexpr double kTargetMeanError = 0.03;

double median_abs_error(const std::vector<ValidationRow>& rows);
double worst_abs_error(const std::vector<ValidationRow>& rows);
double mean_error(const std::vector<ValidationRow>& rows);  // signed
// Whether the rows meet all three targets.
bool within_target(const std::vector<ValidationRow>& rows);

nlohmann::ordered_json validation_json(const std::vector<ValidationRow>& rows);
// `command` is how the report was produced, quoted in it so that anyone can rerun it.
std::string validation_markdown(const std::vector<ValidationRow>& rows, const std::string& command);

}  // namespace dtsim
