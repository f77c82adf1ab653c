// `dtsim check`: validate a scenario without running it.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "scenarios/loader.h"

namespace dtsim::cli {

Command add_check_command(CLI::App& app) {
  struct Args {
    std::string scenario;
    std::vector<std::string> sets;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("check", "Validate a scenario without running it");
  cmd->add_option("scenario", args->scenario, "Scenario JSON file")->required();
  cmd->add_option("--set", args->sets, "Override a key before validation: a.b.c=VALUE (repeatable)");
  return {cmd, [args] {
    const Scenario s = load_scenario_file(args->scenario, args->sets);
    std::cout << "ok: " << s.name << ": " << s.cluster.num_ranks() << " ranks on "
              << s.cluster.nodes.size() << " nodes, " << s.cluster.topology.num_links()
              << " links; " << s.graph.tasks().size() << " tasks, " << s.graph.collectives().size()
              << " collective calls\n";
    return kExitOk;
  }};
}

}  // namespace dtsim::cli
