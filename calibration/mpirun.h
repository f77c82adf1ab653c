// The mpirun command line (Open MPI) that launches an MPI program of ours on this machine:
// the collective probe and the ranks of a real run share it.
#pragma once

#include <string>
#include <vector>

namespace dtsim::calibration {

// `mpirun -np ranks --bind-to core --map-by core [--allow-run-as-root] [extra...] program...`:
// one rank per core, so that ranks never time each other's waits, and the flag Open MPI
// wants before it starts as root. Without `bind` (ranks on hosts that are namespaces of
// this machine, each of which mpirun would bind to its own core 0) it passes
// --bind-to none, and the ranks pin themselves.
std::vector<std::string> mpirun_command(int ranks, const std::vector<std::string>& extra,
                                        const std::vector<std::string>& program, bool bind = true);

}  // namespace dtsim::calibration
