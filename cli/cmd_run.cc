// `dtsim run`: simulate a scenario, print the summary, write summary/trace/CSV files.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "cli/commands.h"
#include "cli/run_session.h"
#include "reports/critical_path_report.h"
#include "reports/csv_tables.h"
#include "reports/output_set.h"
#include "reports/summary.h"
#include "reports/trace_writer.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"

namespace dtsim::cli {
namespace {

struct RunArgs {
  std::string scenario;
  std::string out;
  std::vector<std::string> sets;
  std::optional<std::string> costs;
  std::optional<std::string> costs_device;
  bool no_timing = false;
  bool critical_path = false;
  bool quiet = false;
};

int run(const RunArgs& args) {
  RunSession session(!args.quiet);
  Scenario scenario = load_scenario_file(args.scenario, args.sets);
  const std::filesystem::path out =
      args.out.empty() ? std::filesystem::path("dtsim-out") / folder_name(scenario.name)
                       : std::filesystem::path(args.out);
  // Taken before the simulation, so that a second run into the folder is refused at once
  // rather than after its work.
  OutputSet outputs(out, "summary.json");
  const int traced = trace_ranks(scenario);
  RunOutputs kept;
  kept.trace_ranks = scenario.simulation.trace ? traced : 0;
  kept.task_times = args.critical_path;
  const LoweredScenario lowered = lower_with_chosen_costs(
      scenario, CostsChoice{args.costs, args.costs_device}, session.control(), memory_budget(kept));
  if (lowered.cancelled || session.interrupted()) return session.report_interrupted("run");
  auto trace = std::make_unique<TraceWriter>(lowered, traced);
  std::vector<SimObserver*> observers;
  if (scenario.simulation.trace) observers.push_back(trace.get());
  std::optional<TaskTimesRecorder> times;
  if (args.critical_path) observers.push_back(&times.emplace(lowered.graph.num_tasks()));
  const ScenarioRun result = run_scenario(scenario, lowered, observers, session.control());
  if (result.result.cancelled || session.interrupted()) return session.report_interrupted("run");

  SummaryOptions opts;
  opts.include_wall_time = !args.no_timing;
  const auto summary = make_summary(lowered, result, opts);
  // Files are staged first and put in place together with the summary (reports/output_set.h):
  // a Ctrl-C or kill before the commit leaves the earlier run's set whole.
  session.finish();
  outputs.write("ranks.csv", [&](std::ostream& f) { write_ranks_csv(f, lowered, result); });
  outputs.write("links.csv", [&](std::ostream& f) { write_links_csv(f, lowered, result); });
  if (scenario.simulation.trace) {
    outputs.write("trace.json", [&](std::ostream& f) { trace->write(f, lowered); });
  }
  std::string critical_text;
  if (times) {
    const auto path = critical_path(lowered.graph, times->times());
    outputs.write("critical_path.csv", [&](std::ostream& f) {
      write_critical_path_csv(f, times->times(), lowered.graph, path);
    });
    critical_text =
        format_critical_path_text(critical_path_totals(times->times(), lowered.graph, path),
                                  times->times(), lowered.graph, path);
  }
  // The last point at which a Ctrl-C still leaves the earlier outputs as they were.
  if (session.interrupted()) return session.report_interrupted("run");
  outputs.commit(summary);
  if (!args.quiet) std::cout << format_summary_text(summary) << critical_text;
  if (!args.quiet) {
    std::cout << "\nwrote " << (out / "summary.json").string() << ", ranks.csv, links.csv"
              << (scenario.simulation.trace
                      ? ", trace.json" + (traced < scenario.cluster.num_ranks()
                                              ? " (ranks 0-" + std::to_string(traced - 1) + ")"
                                              : std::string())
                      : "")
              << (times ? ", critical_path.csv" : "") << "\n";
    for (const std::string& name : outputs.removed_stale())
      std::cout << "removed " << (out / name).string() << ", left by an earlier run\n";
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
  CLI::App* cmd = app.add_subcommand("run",
                                     "Simulate a scenario; print a summary and write "
                                     "summary.json, trace.json, ranks.csv, links.csv");
  cmd->add_option("scenario", args->scenario, "Scenario JSON file")->required();
  cmd->add_option("--out", args->out, "Output folder (default dtsim-out/<scenario name>)");
  cmd->add_option("--set", args->sets,
                  "Override a key before validation: a.b.c=VALUE (repeatable)");
  cmd->add_option("--costs", args->costs,
                  "Price ops with the measured model over this cost database (wins over the "
                  "scenario's simulation.cost_model)");
  cmd->add_option("--costs-device", args->costs_device,
                  "The scenario device the --costs database prices (default: the one it was "
                  "measured for)");
  cmd->add_flag("--no-timing", args->no_timing,
                "Leave host wall time out of summary.json (byte-identical reruns)");
  cmd->add_flag("--quiet", args->quiet, "Print nothing on success (and no progress bar)");
  cmd->add_flag(
      "--critical-path", args->critical_path,
      "Also find the chain of tasks that set the step's end: print where its time went and "
      "write critical_path.csv");
  return {cmd, [args] { return run(*args); }};
}

}  // namespace dtsim::cli
