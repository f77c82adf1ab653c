// `dtsim sweep`: run the cartesian product of --vary values on several threads and write
// one CSV row per point.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "cli/commands.h"
#include "reports/atomic_file.h"
#include "reports/collective_bandwidth.h"
#include "reports/csv_tables.h"
#include "runner/scenario_runner.h"
#include "runner/parallel_points.h"
#include "runner/sweep_points.h"
#include "scenarios/loader.h"

namespace dtsim::cli {
namespace {

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> vary;
  std::vector<std::string> sets;
  std::string out;
  unsigned jobs = 0;
};

// One finished point: its figures by column name, in the order they were added.
struct PointResult {
  std::vector<std::pair<std::string, std::string>> columns;
  std::vector<std::string> errors;  // bad input (exit 2)
  std::string failure;              // anything else that went wrong (exit 1)
};

PointResult run_point(const SweepArgs& args, const SweepPoint& point) {
  PointResult out;
  std::vector<std::string> overrides = args.sets;
  for (const auto& [key, value] : point.assignments) overrides.push_back(key + "=" + value);
  try {
    Scenario scenario = load_scenario_file(args.scenario, overrides);
    // The run's records view the lowered graph's labels: keep it alive with them.
    const LoweredScenario lowered = lower_with_chosen_costs(scenario);
    const ScenarioRun run = run_scenario(scenario, lowered);
    const RunResult& r = run.result;
    auto add = [&](std::string name, std::string value) {
      out.columns.emplace_back(std::move(name), std::move(value));
    };
    add("completed", r.stalled.empty() ? "1" : "0");
    add("simulated_time_s", fmt::format("{:.9g}", r.end.seconds()));
    add("wall_time_s", fmt::format("{:.6f}", run.wall_time_s));
    add("events", std::to_string(r.events));
    for (const CollectiveRecord& c : r.collectives) {
      const Duration t = c.end - c.start;
      const double algbw = algorithm_bandwidth_GBps(c.bytes, t);
      const std::string label(c.label);
      add(label + ".algorithm", std::string(algorithm_name(c.algorithm)));
      add(label + ".time_s", fmt::format("{:.9g}", t.seconds()));
      add(label + ".busbw_GBps",
          fmt::format("{:.6g}", algbw * bus_bandwidth_factor(c.op, c.ranks)));
    }
  } catch (const ScenarioError& e) {
    out.errors = e.messages();
  } catch (const std::exception& e) {
    // Not bad input: a failure of this point (exit 1), never an escape from the thread.
    out.failure = e.what();
  }
  return out;
}

int sweep(const SweepArgs& args) {
  std::vector<std::string> vary_errors;
  const std::vector<SweepPoint> points = expand_sweep_points(args.vary, vary_errors);
  if (!vary_errors.empty()) {
    for (const auto& e : vary_errors) std::cerr << "error: --vary " << e << "\n";
    return kExitBadInput;
  }
  std::vector<PointResult> results(points.size());
  std::atomic<bool> failed{false};
  std::mutex progress;
  // After a point fails the ones left are skipped.
  run_points_in_parallel(points.size(), args.jobs, [&](size_t i) {
    if (failed) return;
    results[i] = run_point(args, points[i]);
    if (!results[i].errors.empty() || !results[i].failure.empty()) failed = true;
    std::lock_guard lock(progress);
    std::cerr << "point " << i + 1 << "/" << points.size() << " " << points[i].describe()
              << (results[i].errors.empty() ? (results[i].failure.empty() ? "" : "  (failed)")
                                            : "  (invalid)")
              << "\n";
  });

  bool bad = false;
  for (size_t i = 0; i < points.size(); ++i) {
    for (const auto& e : results[i].errors) {
      std::cerr << "error: point " << points[i].describe() << ": " << e << "\n";
      bad = true;
    }
  }
  if (bad) return kExitBadInput;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!results[i].failure.empty()) {
      std::cerr << "error: point " << points[i].describe() << ": " << results[i].failure << "\n";
      return kExitFailure;
    }
  }

  // Columns: the varied keys, then every figure in the order first seen.
  std::vector<std::string> figure_columns;
  for (const auto& r : results) {
    for (const auto& [name, value] : r.columns) {
      if (std::find(figure_columns.begin(), figure_columns.end(), name) == figure_columns.end()) {
        figure_columns.push_back(name);
      }
    }
  }
  write_file_atomically(args.out, [&](std::ostream& out) {
    out << "point";
    for (const auto& [key, values] : points.front().assignments) out << "," << csv_field(key);
    for (const auto& c : figure_columns) out << "," << csv_field(c);
    out << "\n";
    for (size_t i = 0; i < points.size(); ++i) {
      out << i;
      for (const auto& [key, value] : points[i].assignments) out << "," << csv_field(value);
      std::map<std::string, std::string> row(results[i].columns.begin(), results[i].columns.end());
      for (const auto& c : figure_columns) out << "," << csv_field(row.count(c) ? row[c] : "");
      out << "\n";
    }
  });
  std::cout << "wrote " << points.size() << " point(s) to " << args.out << "\n";
  return kExitOk;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run the cartesian product of --vary values; one CSV row per point");
  cmd->add_option("scenario", args->scenario, "Scenario JSON file")->required();
  cmd->add_option("--vary", args->vary,
                  "a.b.c=v1,v2,... (repeatable; commas inside [..] or quotes stay in a value)")
      ->required();
  cmd->add_option("--set", args->sets, "Override a key for every point: a.b.c=VALUE (repeatable)");
  cmd->add_option("--jobs,-j", args->jobs, "Points run at once (default: hardware threads)");
  cmd->add_option("--out", args->out, "Result CSV file")->required();
  return {cmd, [args] { return sweep(*args); }};
}

}  // namespace dtsim::cli
