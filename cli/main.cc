// dtsim: simulate distributed deep-learning training on a described cluster.
#include <iostream>

#include "cli/commands.h"
#include "scenarios/json_document.h"

int main(int argc, char** argv) {
  using namespace dtsim::cli;
  CLI::App app{
      "dtsim: a discrete-event simulator and performance model of distributed "
      "deep-learning training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dtsim 0.1.0");
  uint64_t max_input = dtsim::kDefaultMaxInputBytes;
  app.add_option("--max-input-size", max_input,
                 "The largest input file read (scenario, lowered graph, model config), e.g. "
                 "8GiB; a larger one is refused before it is read")
      ->transform(CLI::AsSizeValue(false))
      ->default_str("1GiB");
  std::optional<uint64_t> max_memory;
  app.add_option("--max-memory", max_memory,
                 "The memory a run may take, e.g. 16GiB (default: what the machine has "
                 "available); a run estimated to need more is refused before it is lowered")
      ->transform(CLI::AsSizeValue(false));
  // Global options may follow the subcommand too.
  app.fallthrough();
  std::vector<Command> commands;
  for (auto add : {add_run_command, add_check_command, add_lower_command, add_list_command,
                   add_sweep_command, add_reproduce_command, add_calibrate_command,
                   add_costs_command, add_plans_command, add_validate_command}) {
    commands.push_back(add(app));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // --help and --version are successes; every other parse error is bad input.
    return code == 0 ? kExitOk : kExitBadInput;
  }
  dtsim::set_max_input_bytes(max_input);
  set_max_memory(max_memory);
  for (auto& [sub, action] : commands) {
    if (sub->parsed()) {
      try {
        return action();
      } catch (const std::exception& e) {
        return report_error(e);
      }
    }
  }
  return kExitFailure;
}
