// `dtsim check`: validate a scenario and lower it (the plan is checked against the cluster
// there) without simulating it.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"
#include "sim/rank_fold.h"

namespace dtsim::cli {

namespace {

std::string describe_fold(const RankFold& f) {
  std::string out =
      fmt::format("{} {} of up to {} {}", f.classes, f.classes == 1 ? "class" : "classes",
                  f.largest_class, f.largest_class == 1 ? "rank" : "ranks");
  if (!f.unclassed.empty()) return out + " (each rank its own: " + f.unclassed + ")";
  if (!f.consistent())
    return out + "; one rank of each cannot stand for the rest: " + f.inconsistent;
  if (!f.folds()) return out;
  return out + fmt::format(
                   "; one rank of each stands for the rest in every call and message "
                   "({} of {} calls and {} of {} messages mirror a representative's)",
                   f.mirror_calls, f.call_source.size(), f.mirror_messages, f.messages);
}

}  // namespace

Command add_check_command(CLI::App& app) {
  struct Args {
    std::string scenario;
    std::vector<std::string> sets;
    std::optional<std::string> costs;
    std::optional<std::string> costs_device;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("check", "Validate a scenario without running it");
  cmd->add_option("scenario", args->scenario, "Scenario JSON file")->required();
  cmd->add_option("--set", args->sets, "Override a key before validation: a.b.c=VALUE (repeatable)");
  cmd->add_option("--costs", args->costs, "Price ops with the measured model over this database");
  cmd->add_option("--costs-device", args->costs_device,
                  "The scenario device the --costs database prices (default: the one it was "
                  "measured for)");
  return {cmd, [args] {
    Scenario s = load_scenario_file(args->scenario, args->sets);
    const CostsChoice choice{args->costs, args->costs_device};
    // What `dtsim run` would need, said before the lowering that check itself does.
    RunOutputs run;
    if (s.simulation.trace) run.trace_ranks = trace_ranks(s);
    const MemoryEstimate estimate = estimate_memory(s, *choose_cost_model(s, choice), run);
    const LoweredScenario l =
        lower_with_chosen_costs(s, choice, {}, memory_budget({.simulate = false}));
    std::cout << "ok: " << s.name << ": " << s.cluster.num_ranks() << " ranks on "
              << s.cluster.nodes.size() << " nodes, " << s.cluster.topology.num_links()
              << " links; " << l.graph.tasks().size() << " tasks, " << l.graph.collectives().size()
              << " collective calls, " << l.graph.num_op_lists() << " distinct op lists\n"
              << "memory: dtsim run needs an estimated " << describe_estimate(estimate) << "\n"
              << "ranks alike: " << describe_fold(fold_ranks(l.graph, s.cluster)) << "\n";
    return kExitOk;
  }};
}

}  // namespace dtsim::cli
