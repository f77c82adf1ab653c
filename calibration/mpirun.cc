// mpirun_command: ranks pinned one per core, root allowed when we are root.
#include "calibration/mpirun.h"

#include <unistd.h>

namespace dtsim::calibration {

std::vector<std::string> mpirun_command(int ranks, const std::vector<std::string>& extra,
                                        const std::vector<std::string>& program, bool bind) {
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(ranks)};
  if (bind) {
    argv.insert(argv.end(), {"--bind-to", "core", "--map-by", "core"});
  } else {
    argv.insert(argv.end(), {"--bind-to", "none"});
  }
  // Open MPI refuses to start as root unless told to.
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

}  // namespace dtsim::calibration
