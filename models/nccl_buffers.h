// The device memory NCCL's communicators hold on one rank: a pair of connections per
// channel of each communicator its collectives use, per peer-to-peer channel of each
// pipeline peer in its node, and the shared pools of its transfers to peers in other nodes
// (sim/nccl_figures.h gives NCCL's figures).
#pragma once

#include <optional>
#include <vector>

#include "sim/device.h"
#include "sim/units.h"

namespace dtsim {

// A communicator as one of its members sees it.
struct NcclCommunicatorView {
  // Its members span nodes: its rings cross the network through `nics` NICs of each node.
  bool spans_nodes = false;
  int nics = 0;
  // No other member shares the rank's node: its ring neighbours are in other nodes.
  bool alone_in_node = false;
};

struct NcclRankView {
  const DeviceSpec* device = nullptr;
  Bandwidth nic_bandwidth;  // of one NIC of the rank's node
  // The communicators the rank's collectives use (tensor, context, data, expert and
  // expert-data parallel, cross-region, a sharded classifier's).
  std::vector<NcclCommunicatorView> collectives;
  // The pipeline's communicator, when there is one, and the peers the rank sends to and
  // receives from in it (the previous and next stages), in its node and in others.
  std::optional<NcclCommunicatorView> pipeline;
  int pipeline_local_peers = 0;
  int pipeline_remote_peers = 0;
  int local_nics = 1;  // NICs nearest the rank's device (ncclTopoGetLocalNetCountByBw)
};

// Zero for devices that run no NCCL (nccl_channels 0, or not a GPU).
Bytes nccl_buffer_bytes(const NcclRankView& view);

}  // namespace dtsim
