// Validation against published results: rows, median and worst error, and writers.
#include "reports/validation_report.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace dtsim {

namespace {

std::vector<double> abs_errors(const std::vector<ValidationRow>& rows) {
  std::vector<double> out;
  for (const ValidationRow& r : rows) out.push_back(std::abs(r.error));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

double median_abs_error(const std::vector<ValidationRow>& rows) {
  const std::vector<double> e = abs_errors(rows);
  if (e.empty()) return 0;
  const size_t n = e.size();
  return n % 2 == 1 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
}

double worst_abs_error(const std::vector<ValidationRow>& rows) {
  const std::vector<double> e = abs_errors(rows);
  return e.empty() ? 0 : e.back();
}

nlohmann::ordered_json validation_json(const std::vector<ValidationRow>& rows) {
  nlohmann::ordered_json out;
  auto cases = nlohmann::ordered_json::array();
  for (const ValidationRow& r : rows) {
    cases.push_back({{"case", r.name},
                     {"scenario", r.scenario},
                     {"source", r.source},
                     {"metric", r.metric},
                     {"reference", r.reference},
                     {"predicted", r.predicted},
                     {"error", r.error}});
  }
  const double median = median_abs_error(rows);
  const double worst = worst_abs_error(rows);
  out["cases"] = std::move(cases);
  out["median_abs_error"] = median;
  out["worst_abs_error"] = worst;
  out["target"] = {{"median_abs_error", kTargetMedianError}, {"worst_abs_error", kTargetWorstError}};
  out["within_target"] = !rows.empty() && median <= kTargetMedianError && worst <= kTargetWorstError;
  return out;
}

std::string validation_markdown(const std::vector<ValidationRow>& rows, const std::string& command) {
  std::string out = "# Validation against published results\n\n";
  out +=
      "Each scenario in `scenarios/validation/` reproduces a published configuration and "
      "carries the published figure in its `reference` block (its description and the "
      "reference's note say where it comes from and what had to be assumed). Every "
      "parameter is a property of a device, link or kernel; nothing is fitted per case. "
      "Device figures calibrated on published runs (the H100's "
      "`sustained_compute_fraction`) are calibrated on runs that are not among these "
      "cases: `scenarios/calibration/`, and docs/training.md, \"Calibrated figures\".\n\n";
  out += "Regenerate this page and `docs/validation.json` with:\n\n```sh\n" + command + "\n```\n\n";
  out += "| case | metric | reference | predicted | error |\n|---|---|---:|---:|---:|\n";
  for (const ValidationRow& r : rows) {
    out += fmt::format("| {} | {} | {:.4g} | {:.4g} | {:+.1f}% |\n", r.name, r.metric, r.reference,
                       r.predicted, 100 * r.error);
  }
  const double median = median_abs_error(rows);
  const double worst = worst_abs_error(rows);
  const bool within = !rows.empty() && median <= kTargetMedianError && worst <= kTargetWorstError;
  out += fmt::format(
      "\n{} cases. Median |error| {:.1f}%, worst |error| {:.1f}% (target: median at most {:.0f}%, "
      "none worse than {:.0f}%): {}.\n",
      rows.size(), 100 * median, 100 * worst, 100 * kTargetMedianError, 100 * kTargetWorstError,
      within ? "within target" : "NOT within target");
  out += "\nSources:\n\n";
  for (const ValidationRow& r : rows) out += fmt::format("- {}: {}\n", r.name, r.source);
  return out;
}

}  // namespace dtsim
