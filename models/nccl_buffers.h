// The device memory NCCL's communicators hold on one rank: a connection's buffers per
// channel of each communicator its collectives use, and per peer-to-peer channel of each
// pipeline peer it receives from (sim/nccl_figures.h gives NCCL's figures).
#pragma once

#include <vector>

#include "sim/device.h"
#include "sim/units.h"

namespace dtsim {

struct NcclRankView {
  const DeviceSpec* device = nullptr;
  // One entry per communicator the rank's collectives use (tensor, context, data, expert
  // and expert-data parallel, cross-region): whether the rank's ring neighbours in it are in
  // other nodes (no other member shares its node).
  std::vector<bool> collectives_over_network;
  // The pipeline communicator: whether each peer the rank receives from is in another
  // node, how many ranks the communicator has, and whether any of them shares a node.
  std::vector<bool> pipeline_peers_remote;
  int pipeline_ranks = 0;
  bool pipeline_spans_nodes = false;
  bool pipeline_has_local_peer = false;
  // The NICs closest to the rank's device (NCCL's ncclTopoGetLocalNetCountByBw) and their
  // bandwidth together.
  int local_nics = 1;
  Bandwidth local_nic_bandwidth;
};

// Zero for devices that run no NCCL (nccl_channels 0, or not a GPU).
Bytes nccl_buffer_bytes(const NcclRankView& view);

}  // namespace dtsim
