// Emulated links for a real run on one machine (dtsim validate --emulate-links): each rank
// in a network namespace of its own, the path between every two ranks a pair of TUN devices
// joined by dtsim-link-emulator (the path's latency; this kernel has no netem), or a veth
// pair where the latency is too short for a delay line to add, shaped by `tc tbf` (its
// bandwidth), and a control veth per namespace for mpirun's daemons. MPI
// then runs over TCP on the emulated paths only, so shared memory cannot bypass them.
// Everything is removed when the object goes, also when the run failed.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sim/topology.h"

namespace dtsim {

// The path between ranks a < b: the narrowest link of the route and the route's latency.
struct EmulatedPath {
  int a = 0;
  int b = 0;
  double bytes_per_s = 0;
  double latency_s = 0;
};

// Every pair of the cluster's first `ranks` ranks, from the simulator's routes.
std::vector<EmulatedPath> emulated_paths(const Cluster& cluster, int ranks);

class EmulatedNetwork {
 public:
  // Needs root (namespaces, TUN devices, tc). Throws std::runtime_error naming the command
  // that failed, after removing what it had made.
  EmulatedNetwork(int ranks, const std::vector<EmulatedPath>& paths,
                  const std::filesystem::path& emulator, const std::filesystem::path& folder);
  ~EmulatedNetwork();
  EmulatedNetwork(const EmulatedNetwork&) = delete;
  EmulatedNetwork& operator=(const EmulatedNetwork&) = delete;

  std::string namespace_of(int rank) const;
  std::vector<std::string> namespaces() const;
  // mpirun's options: the namespaces as hosts of a hostfile, reached through an
  // `ip netns exec` launch agent, the daemons' traffic on the control veths, MPI's on the
  // emulated paths over TCP.
  std::vector<std::string> mpirun_options() const;

 private:
  void undo();
  void start_emulator(std::vector<std::string> argv);
  int ranks_;
  std::string prefix_;  // dtsim-<pid>-<n>
  std::filesystem::path folder_;
  pid_t emulator_ = -1;
  bool made_ = false;
};

// Whether this process may build an emulated network here (root, /dev/net/tun, `ip`, `tc`);
// otherwise why not, in a sentence.
std::string emulation_unavailable_reason();

}  // namespace dtsim
