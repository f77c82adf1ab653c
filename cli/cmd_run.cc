// `dtsim run`: simulate a scenario, print the summary, write summary/trace/CSV files.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "cli/commands.h"
#include "reports/csv_tables.h"
#include "reports/summary.h"
#include "reports/trace_writer.h"
#include "scenarios/loader.h"
#include "scenarios/scenario_runner.h"

namespace dtsim::cli {
namespace {

struct RunArgs {
  std::string scenario;
  std::string out;
  std::vector<std::string> sets;
  bool no_timing = false;
  bool quiet = false;
};

// The scenario name as a single folder name: separators and leading dots replaced, so a
// name like "../x" cannot place outputs outside dtsim-out/.
std::string folder_name(std::string name) {
  for (char& c : name) {
    if (c == '/' || c == '\\') c = '_';
  }
  while (!name.empty() && name.front() == '.') name.front() = '_';
  return name.empty() ? "scenario" : name;
}

std::ofstream open_output(const std::filesystem::path& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  return f;
}

int run(const RunArgs& args) {
  const Scenario scenario = load_scenario_file(args.scenario, args.sets);
  const std::filesystem::path out =
      args.out.empty() ? std::filesystem::path("dtsim-out") / folder_name(scenario.name)
                       : std::filesystem::path(args.out);
  std::filesystem::create_directories(out);
  // A training step's trace keeps the first 64 ranks unless the scenario says otherwise.
  const int trace_ranks = scenario.simulation.trace_ranks.value_or(
      scenario.training ? std::min(64, scenario.cluster.num_ranks()) : scenario.cluster.num_ranks());
  auto trace = std::make_unique<TraceWriter>(scenario, trace_ranks);
  std::vector<SimObserver*> observers;
  if (scenario.simulation.trace) observers.push_back(trace.get());
  const ScenarioRun result = run_scenario(scenario, observers);

  SummaryOptions opts;
  opts.include_wall_time = !args.no_timing;
  const auto summary = make_summary(scenario, result, opts);
  if (!args.quiet) std::cout << format_summary_text(summary);
  open_output(out / "summary.json") << summary.dump(2) << "\n";
  {
    auto f = open_output(out / "ranks.csv");
    write_ranks_csv(f, scenario, result);
  }
  {
    auto f = open_output(out / "links.csv");
    write_links_csv(f, scenario, result);
  }
  if (scenario.simulation.trace) {
    auto f = open_output(out / "trace.json");
    trace->write(f, scenario);
  }
  if (!args.quiet) {
    std::cout << "\nwrote " << (out / "summary.json").string() << ", ranks.csv, links.csv"
              << (scenario.simulation.trace
                      ? ", trace.json" + (trace_ranks < scenario.cluster.num_ranks()
                                              ? " (ranks 0-" + std::to_string(trace_ranks - 1) + ")"
                                              : std::string())
                      : "")
              << "\n";
  }
  if (!result.result.stalled.empty()) {
    std::cerr << "error: the run did not complete: " << result.result.stalled.size()
              << " task(s) never finished (see summary.json \"stalled\")\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Simulate a scenario; print a summary and write "
                                            "summary.json, trace.json, ranks.csv, links.csv");
  cmd->add_option("scenario", args->scenario, "Scenario JSON file")->required();
  cmd->add_option("--out", args->out, "Output folder (default dtsim-out/<scenario name>)");
  cmd->add_option("--set", args->sets, "Override a key before validation: a.b.c=VALUE (repeatable)");
  cmd->add_flag("--no-timing", args->no_timing,
                "Leave host wall time out of summary.json (byte-identical reruns)");
  cmd->add_flag("--quiet", args->quiet, "Print nothing on success");
  return {cmd, [args] { return run(*args); }};
}

}  // namespace dtsim::cli
