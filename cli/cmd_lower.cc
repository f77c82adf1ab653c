// `dtsim lower`: lower a scenario and write its TaskGraph as a scenario of its own, a
// task_graph workload over the same cluster whose tasks are in a lowered-graph file.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/run_session.h"
#include "reports/atomic_file.h"
#include "reports/lowered_graph_writer.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"

namespace dtsim::cli {
namespace {

struct LowerArgs {
  std::string scenario;
  std::string out;
  std::vector<std::string> sets;
  std::optional<std::string> costs;
  std::optional<std::string> costs_device;
  bool quiet = false;
};

int lower(const LowerArgs& args) {
  RunSession session(!args.quiet);
  Scenario scenario = load_scenario_file(args.scenario, args.sets);
  const auto t0 = std::chrono::steady_clock::now();
  const LoweredScenario lowered =
      lower_with_chosen_costs(scenario, CostsChoice{args.costs, args.costs_device},
                              session.control(), memory_budget({.simulate = false}));
  if (lowered.cancelled || session.interrupted()) return session.report_interrupted("lowering");
  const std::filesystem::path out(args.out);
  const std::filesystem::path graph_file =
      out.parent_path() / (out.stem().string() + ".tasks.jsonl");
  // Local SGD: the step that reduces inside each region only, in a file of its own.
  const std::filesystem::path local_file =
      out.parent_path() / (out.stem().string() + ".local.tasks.jsonl");
  // The scenario that runs the graph: the same cluster and simulation settings.
  nlohmann::ordered_json doc;
  doc["name"] = scenario.name + " (lowered)";
  doc["description"] = "The TaskGraph of " + scenario.source + " as `dtsim lower` wrote it at " +
                       std::string(models::granularity_name(scenario.simulation.granularity)) +
                       " granularity, priced by the " + lowered.cost_model + " cost model.";
  doc["cluster"] = scenario.document.at("cluster");
  if (scenario.document.contains("simulation")) {
    doc["simulation"] = scenario.document.at("simulation");
    // The graph's tasks are cut already; the key belongs to training scenarios.
    doc["simulation"].erase("granularity");
  }
  doc["workload"] = {{"kind", "task_graph"}, {"graph_file", graph_file.filename().string()}};
  if (lowered.local_graph) {
    doc["workload"]["local_graph_file"] = local_file.filename().string();
    doc["workload"]["sync_every"] = lowered.sync_every;
  }
  if (!out.parent_path().empty()) std::filesystem::create_directories(out.parent_path());
  session.finish();
  LoweredGraphStats stats;
  write_file_atomically(graph_file, [&](std::ostream& f) {
    stats = write_lowered_graph(f, lowered.graph, scenario.cluster.num_ranks());
  });
  if (lowered.local_graph) {
    write_file_atomically(local_file, [&](std::ostream& f) {
      const LoweredGraphStats local =
          write_lowered_graph(f, *lowered.local_graph, scenario.cluster.num_ranks());
      stats.tasks += local.tasks;
      stats.templates += local.templates;
      stats.op_lists += local.op_lists;
      stats.collectives += local.collectives;
    });
  }
  write_file_atomically(out, doc.dump(2) + "\n");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!args.quiet) {
    std::cout << fmt::format(
        "wrote {} and {}{} ({} tasks on {} ranks in {} templates, {} op lists, {} collective "
        "calls, {:.1f} MB) in {:.2f} s\n",
        out.string(), graph_file.string(),
        lowered.local_graph ? " with its local SGD step " + local_file.string() : "", stats.tasks,
        scenario.cluster.num_ranks(), stats.templates, stats.op_lists, stats.collectives,
        static_cast<double>(std::filesystem::file_size(graph_file) +
                            (lowered.local_graph ? std::filesystem::file_size(local_file) : 0)) /
            1e6,
        seconds);
    if (!lowered.phase_graphs.empty()) {
      std::cout << "note: the batch-size schedule's phase steps are not written; the file is "
                   "the step at global_batch\n";
    }
  }
  return kExitOk;
}

}  // namespace

Command add_lower_command(CLI::App& app) {
  auto args = std::make_shared<LowerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "lower",
      "Lower a scenario and write its TaskGraph as a task_graph scenario (OUT) and a "
      "lowered-graph file beside it (OUT's stem + .tasks.jsonl)");
  cmd->add_option("scenario", args->scenario, "Scenario JSON file")->required();
  cmd->add_option("--out", args->out, "The scenario to write, e.g. graph.json")->required();
  cmd->add_option("--set", args->sets,
                  "Override a key before validation: a.b.c=VALUE (repeatable)");
  cmd->add_option("--costs", args->costs, "Price ops with the measured model over this database");
  cmd->add_option("--costs-device", args->costs_device,
                  "The scenario device the --costs database prices (default: the one it was "
                  "measured for)");
  cmd->add_flag("--quiet", args->quiet, "Print nothing on success (and no progress bar)");
  return {cmd, [args] { return lower(*args); }};
}

}  // namespace dtsim::cli
