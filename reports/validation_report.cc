// Validation against published results: rows, their error figures, and writers.
#include "reports/validation_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

namespace dtsim {

namespace {

std::vector<double> abs_errors(const std::vector<ValidationRow>& rows) {
  std::vector<double> out;
  for (const ValidationRow& r : rows) out.push_back(std::abs(r.error));
  std::sort(out.begin(), out.end());
  return out;
}

using Rows = std::vector<ValidationRow>;

// The training rows, split by whether their stack is modelled; and the collective cases'
// rows, case by case in the order they came.
struct Split {
  Rows modelled, legacy, training;
  std::vector<std::pair<std::string, Rows>> collectives;
};

Split split(const Rows& rows) {
  Split s;
  for (const ValidationRow& r : rows) {
    if (r.collective()) {
      if (s.collectives.empty() || s.collectives.back().first != r.scenario)
        s.collectives.emplace_back(r.scenario, Rows{});
      s.collectives.back().second.push_back(r);
      continue;
    }
    s.training.push_back(r);
    (r.stack_modelled ? s.modelled : s.legacy).push_back(r);
  }
  return s;
}

nlohmann::ordered_json figures(const Rows& rows) {
  return {{"cases", rows.size()},
          {"median_abs_error", median_abs_error(rows)},
          {"worst_abs_error", worst_abs_error(rows)},
          {"mean_error", mean_error(rows)}};
}

std::string figures_line(const Rows& rows) {
  return fmt::format("median |error| {:.1f}%, worst |error| {:.1f}%, mean signed error {:+.1f}%",
                     100 * median_abs_error(rows), 100 * worst_abs_error(rows),
                     100 * mean_error(rows));
}

std::string size_name(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  int64_t v = bytes;
  while (u + 1 < std::size(kUnits) && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{} {}", v, kUnits[u]);
}

}  // namespace

double median_abs_error(const Rows& rows) {
  const std::vector<double> e = abs_errors(rows);
  if (e.empty()) return 0;
  const size_t n = e.size();
  return n % 2 == 1 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
}

double worst_abs_error(const Rows& rows) {
  const std::vector<double> e = abs_errors(rows);
  return e.empty() ? 0 : e.back();
}

double mean_error(const Rows& rows) {
  if (rows.empty()) return 0;
  return std::accumulate(rows.begin(), rows.end(), 0.0,
                         [](double sum, const ValidationRow& r) { return sum + r.error; }) /
         static_cast<double>(rows.size());
}

bool within_target(const Rows& rows) {
  return !rows.empty() && median_abs_error(rows) <= kTargetMedianError &&
         worst_abs_error(rows) <= kTargetWorstError &&
         std::abs(mean_error(rows)) <= kTargetMeanError;
}

nlohmann::ordered_json validation_json(const Rows& rows) {
  const Split s = split(rows);
  nlohmann::ordered_json out;
  auto cases = nlohmann::ordered_json::array();
  for (const ValidationRow& r : s.training) {
    nlohmann::ordered_json c = {{"case", r.name},           {"scenario", r.scenario},
                                {"source", r.source},       {"metric", r.metric},
                                {"reference", r.reference}, {"predicted", r.predicted},
                                {"error", r.error},         {"stack_modelled", r.stack_modelled}};
    if (!r.stack_modelled) c["stack_note"] = r.stack_note;
    cases.push_back(std::move(c));
  }
  out["cases"] = std::move(cases);
  out["stack_modelled"] = figures(s.modelled);
  out["legacy_stack"] = figures(s.legacy);
  out["all"] = figures(s.training);
  out["target"] = {{"median_abs_error", kTargetMedianError},
                   {"worst_abs_error", kTargetWorstError},
                   {"abs_mean_error", kTargetMeanError}};
  out["within_target"] = within_target(s.modelled);
  auto collectives = nlohmann::ordered_json::array();
  for (const auto& [scenario, case_rows] : s.collectives) {
    auto sizes = nlohmann::ordered_json::array();
    for (const ValidationRow& r : case_rows) {
      sizes.push_back({{"bytes", r.bytes},
                       {"algorithm", r.algorithm},
                       {"reference_us", r.reference},
                       {"predicted_us", r.predicted},
                       {"error", r.error}});
    }
    nlohmann::ordered_json c = {{"case", case_rows.front().name},
                                {"scenario", scenario},
                                {"source", case_rows.front().source},
                                {"sizes", std::move(sizes)}};
    c.update(figures(case_rows));
    collectives.push_back(std::move(c));
  }
  out["collectives"] = std::move(collectives);
  return out;
}

std::string validation_markdown(const Rows& rows, const std::string& command) {
  const Split s = split(rows);
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
  const auto table = [](const Rows& r, bool notes) {
    std::string t =
        notes
            ? "| case | metric | reference | predicted | error | why the stack is not modelled |\n"
              "|---|---|---:|---:|---:|---|\n"
            : "| case | metric | reference | predicted | error |\n|---|---|---:|---:|---:|\n";
    for (const ValidationRow& row : r) {
      t += fmt::format("| {} | {} | {:.4g} | {:.4g} | {:+.1f}% |", row.name, row.metric,
                       row.reference, row.predicted, 100 * row.error);
      t += notes ? " " + row.stack_note + " |\n" : "\n";
    }
    return t;
  };
  out += "## Training cases whose software stack is modelled\n\n" + table(s.modelled, false);
  out += fmt::format(
      "\n{} cases: {} (target: median at most {:.0f}%, none worse than {:.0f}%, mean within "
      "+-{:.0f}%): {}.\n",
      s.modelled.size(), figures_line(s.modelled), 100 * kTargetMedianError,
      100 * kTargetWorstError, 100 * kTargetMeanError,
      within_target(s.modelled) ? "within target" : "NOT within target");
  if (!s.legacy.empty()) {
    out +=
        "\n## Training cases on legacy stacks\n\nThe published runs below spend time in their "
        "software stack of the day that no sourced figure gives; their reference blocks say "
        "`\"stack_modelled\": false` and why. They are shown apart from the target.\n\n" +
        table(s.legacy, true);
    out += fmt::format("\n{} cases: {}.\n", s.legacy.size(), figures_line(s.legacy));
  }
  out += fmt::format("\nOver all {} training cases: {}.\n", s.training.size(),
                     figures_line(s.training));
  if (!s.collectives.empty()) {
    out +=
        "\n## NCCL collectives, size by size\n\nPublished nccl-tests runs (the time of one "
        "call; each case's note says how it was measured) against the same sweep simulated on "
        "the same node or cluster. The algorithm column is the one dtsim ran (`auto`: NCCL's "
        "own tuning model picks it).\n";
    for (const auto& [scenario, case_rows] : s.collectives) {
      out += fmt::format("\n### {}\n\n{}\n\n", case_rows.front().name, case_rows.front().source);
      out +=
          "| size | algorithm | reference (us) | predicted (us) | error "
          "|\n|---:|---|---:|---:|---:|\n";
      for (const ValidationRow& r : case_rows) {
        out += fmt::format("| {} | {} | {:.4g} | {:.4g} | {:+.1f}% |\n", size_name(r.bytes),
                           r.algorithm, r.reference, r.predicted, 100 * r.error);
      }
      out += fmt::format("\n{} sizes: {}.\n", case_rows.size(), figures_line(case_rows));
    }
  }
  out += "\nSources:\n\n";
  for (const ValidationRow& r : s.training) out += fmt::format("- {}: {}\n", r.name, r.source);
  for (const auto& [scenario, case_rows] : s.collectives)
    out += fmt::format("- {}: {}\n", case_rows.front().name, case_rows.front().source);
  return out;
}

}  // namespace dtsim
