// `dtsim sweep`: run the cartesian product of --vary values on several threads and write
// one CSV row per point.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "cli/commands.h"
#include "reports/atomic_file.h"
#include "reports/collective_bandwidth.h"
#include "reports/csv_tables.h"
#include "reports/headline_figures.h"
#include "reports/summary.h"
#include "runner/scenario_runner.h"
#include "runner/parallel_points.h"
#include "runner/sweep_points.h"
#include "scenarios/loader.h"
#include "sim/input_error.h"

namespace dtsim::cli {
namespace {

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> vary;
  std::vector<std::string> sets;
  std::string out;
  unsigned jobs = 0;
  bool no_timing = false;
};

// One finished point: its figures by column name, in the order they were added, or why it
// has none.
struct PointResult {
  std::vector<std::pair<std::string, std::string>> columns;
  std::string error;       // empty for a point that ran to its end
  bool bad_input = false;  // the error is the point's input (a value the loader refused)
};

std::string figure(double x) { return fmt::format("{:.9g}", x); }

// A training step's figures: what a planner compares across points, not the hundreds of
// per-collective columns a step's calls would make.
void add_training_columns(const LoweredScenario& lowered, const ScenarioRun& run,
                          PointResult& out) {
  SummaryOptions options;
  options.include_wall_time = false;
  const auto summary = make_summary(lowered, run, options);
  const HeadlineFigures f = headline_figures(summary);
  const auto& training = summary["training"];
  auto add = [&](std::string name, std::string value) {
    out.columns.emplace_back(std::move(name), std::move(value));
  };
  add("step_time_s", figure(f.step_s));
  add("samples_per_s", figure(training.value("samples_per_s", 0.0)));
  add("tokens_per_s", figure(f.tokens_per_s));
  add("mfu", figure(f.mfu));
  add("peak_memory_bytes", figure(f.peak_bytes));
  add("oom_ranks", std::to_string(f.oom_ranks));
}

void add_collective_columns(const RunResult& r, PointResult& out) {
  for (const CollectiveRecord& c : r.collectives) {
    const Duration t = c.end - c.start;
    const double algbw = algorithm_bandwidth_GBps(c.bytes, t);
    const std::string label(c.label);
    out.columns.emplace_back(label + ".algorithm", std::string(algorithm_name(c.algorithm)));
    out.columns.emplace_back(label + ".time_s", figure(t.seconds()));
    out.columns.emplace_back(label + ".busbw_GBps",
                             fmt::format("{:.6g}", algbw * bus_bandwidth_factor(c.op, c.ranks)));
  }
}

PointResult run_point(const SweepArgs& args, const SweepPoint& point) {
  PointResult out;
  std::vector<std::string> overrides = args.sets;
  for (const auto& [key, value] : point.assignments) overrides.push_back(key + "=" + value);
  try {
    Scenario scenario = load_scenario_file(args.scenario, overrides);
    // The run's records view the lowered graph's labels: keep it alive with them.
    const LoweredScenario lowered = lower_with_chosen_costs(scenario, {}, {}, memory_budget());
    const ScenarioRun run = run_scenario(scenario, lowered);
    const RunResult& r = run.result;
    out.columns.emplace_back("simulated_time_s", figure(r.end.seconds()));
    if (!args.no_timing)
      out.columns.emplace_back("wall_time_s", fmt::format("{:.6f}", run.wall_time_s));
    out.columns.emplace_back("events", std::to_string(r.events));
    if (scenario.training) {
      add_training_columns(lowered, run, out);
    } else {
      add_collective_columns(r, out);
    }
    if (!r.stalled.empty()) {
      out.error = "the run did not complete: " + std::to_string(r.stalled.size()) +
                  " task(s) never finished";
    }
  } catch (const InputError& e) {
    out.error = describe_problems(e.problems(), "; ");
    out.bad_input = true;
  } catch (const std::bad_alloc&) {
    out.error = "out of memory: the point's task graph needs more than this machine has";
  } catch (const std::exception& e) {
    // Not bad input: a failure of this point, never an escape from the thread.
    out.error = std::string("internal error: ") + e.what();
  }
  return out;
}

// Refuses an output path that cannot be written before any point runs: the temporary the
// CSV will be staged in is made (and removed) now.
void check_output_path(const std::string& out) {
  std::error_code ec;
  if (std::filesystem::is_directory(out, ec))
    throw std::runtime_error("cannot write " + out + ": it is a folder (--out names the CSV file)");
  StagedFile probe = stage_file(out, [](std::ostream&) {});
}

int sweep(const SweepArgs& args) {
  std::vector<std::string> vary_errors;
  const std::vector<SweepPoint> points = expand_sweep_points(args.vary, vary_errors);
  if (!vary_errors.empty()) {
    for (const auto& e : vary_errors) std::cerr << "error: --vary " << e << "\n";
    return kExitBadInput;
  }
  check_output_path(args.out);
  std::vector<PointResult> results(points.size());
  std::mutex progress;
  run_points_in_parallel(points.size(), args.jobs, [&](size_t i) {
    results[i] = run_point(args, points[i]);
    std::lock_guard lock(progress);
    std::cerr << "point " << i + 1 << "/" << points.size() << " " << points[i].describe()
              << (results[i].error.empty() ? ""
                  : results[i].bad_input   ? "  (invalid)"
                                           : "  (failed)")
              << "\n";
  });

  // Columns: the varied keys, the error, then every figure in the order first seen.
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
    out << ",error";
    for (const auto& c : figure_columns) out << "," << csv_field(c);
    out << "\n";
    for (size_t i = 0; i < points.size(); ++i) {
      out << i;
      for (const auto& [key, value] : points[i].assignments) out << "," << csv_field(value);
      out << "," << csv_field(results[i].error);
      std::map<std::string, std::string> row(results[i].columns.begin(), results[i].columns.end());
      for (const auto& c : figure_columns) out << "," << csv_field(row.count(c) ? row[c] : "");
      out << "\n";
    }
  });
  size_t failed = 0, invalid = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    if (results[i].error.empty()) continue;
    ++failed;
    invalid += results[i].bad_input ? 1 : 0;
    std::cerr << "error: point " << i << " (" << points[i].describe() << "): " << results[i].error
              << "\n";
  }
  std::cout << "wrote " << points.size() << " point(s) to " << args.out;
  if (failed > 0) std::cout << "; " << failed << " failed (their rows say why in \"error\")";
  std::cout << "\n";
  if (failed == 0) return kExitOk;
  // Every point refused its input: the sweep as given is bad input.
  return invalid == points.size() ? kExitBadInput : kExitFailure;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Run the cartesian product of --vary values; one CSV row per point (a point that fails "
      "gets its message in the error column, and the exit code is 1)");
  cmd->add_option("scenario", args->scenario, "Scenario JSON file")->required();
  cmd->add_option("--vary", args->vary,
                  "a.b.c=v1,v2,... (repeatable; commas inside [..] or quotes stay in a value)")
      ->required();
  cmd->add_option("--set", args->sets, "Override a key for every point: a.b.c=VALUE (repeatable)");
  cmd->add_option("--jobs,-j", args->jobs, "Points run at once (default: hardware threads)");
  cmd->add_option("--out", args->out, "Result CSV file")->required();
  cmd->add_flag("--no-timing", args->no_timing,
                "Leave host wall time out of the CSV (byte-identical reruns)");
  return {cmd, [args] { return sweep(*args); }};
}

}  // namespace dtsim::cli
