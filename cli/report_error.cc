// Error reporting shared by the subcommands.
#include <iostream>
#include <new>

#include "cli/commands.h"
#include "scenarios/loader.h"
#include "sim/check.h"

namespace dtsim::cli {

int report_error(const std::exception& e) {
  if (const auto* se = dynamic_cast<const InputError*>(&e)) {
    for (const std::string& line : se->messages()) std::cerr << "error: " << line << "\n";
    std::cerr << se->messages().size() << " error(s); nothing was run\n";
    return kExitBadInput;
  }
  if (dynamic_cast<const InternalError*>(&e) != nullptr) {
    std::cerr << "dtsim: " << e.what()
              << "\nthis is a bug in dtsim; please report it with the "
                 "scenario\n";
    return kExitFailure;
  }
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    std::cerr << "error: dtsim ran out of memory: the scenario's task graph (or its outputs) "
                 "needs more than this machine has; a coarser simulation.granularity, fewer "
                 "ranks or fewer micro-batches make it smaller\n";
    return kExitFailure;
  }
  std::cerr << "error: " << e.what() << "\n";
  return kExitFailure;
}

}  // namespace dtsim::cli
