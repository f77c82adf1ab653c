// What NCCL's tuning model knows of a communicator beyond its layout and links: its ring
// search's channels, its members' architecture, the path inside a node and the protocols on.
#pragma once

namespace dtsim {

struct NcclGroup {
  // The ring search's channels (graph->nChannels: before connectRings doubles them into the
  // communicator's). 0: the members run no NCCL (CPUs, with MPI), and `auto` weighs every
  // algorithm by the alpha-beta estimate instead.
  int graph_channels = 0;
  // The members' smallest compute capability (minCompCap) and whether they differ.
  int compute_capability = 0;
  bool mixed_architectures = false;
  // The path between members of one node is NVLink (else PCIe).
  bool nvlink = false;

  bool runs_nccl() const { return graph_channels > 0; }
};

}  // namespace dtsim
