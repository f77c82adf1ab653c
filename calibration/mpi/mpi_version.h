// The MPI library's own name and version, for the records of the programs that run under
// mpirun (the collective probe, the ranks of a real run).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <string>

namespace dtsim::calibration {

// The first line of MPI_Get_library_version's text ("Open MPI v4.1.4").
inline std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  const std::string v(text, static_cast<size_t>(length));
  return v.substr(0, std::min(v.find(','), v.find('\n')));
}

}  // namespace dtsim::calibration
