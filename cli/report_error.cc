// Error reporting shared by the subcommands.
#include <iostream>

#include "cli/commands.h"
#include "scenarios/loader.h"

namespace dtsim::cli {

int report_error(const std::exception& e) {
  if (const auto* se = dynamic_cast<const ScenarioError*>(&e)) {
    for (const std::string& line : se->messages()) std::cerr << "error: " << line << "\n";
    std::cerr << se->messages().size() << " error(s); nothing was run\n";
    return kExitBadInput;
  }
  std::cerr << "error: " << e.what() << "\n";
  return kExitFailure;
}

}  // namespace dtsim::cli
