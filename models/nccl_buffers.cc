// NCCL's communicator buffers on one rank.
#include "models/nccl_buffers.h"

#include <algorithm>

#include "sim/nccl_figures.h"

namespace dtsim {

Bytes nccl_buffer_bytes(const NcclRankView& view) {
  const DeviceSpec& device = *view.device;
  const int channels = device.efficiency.nccl_channels;
  if (device.kind != DeviceKind::kGpu || channels <= 0) return Bytes(0);
  int64_t bytes = 0;
  // A ring's member receives on one connection per channel; its send connection's buffers
  // are its neighbour's receive buffers.
  for (bool over_network : view.collectives_over_network) {
    bytes += channels * nccl_connection_bytes(over_network).count();
  }
  if (!view.pipeline_peers_remote.empty()) {
    // NCCL gives every peer of a communicator the fewest channels any of its peers gets.
    int per_peer = device.efficiency.nccl_p2p_channels;
    if (view.pipeline_spans_nodes) {
      const int remote = nccl_p2p_channels_per_remote_peer(
          view.local_nics, view.local_nic_bandwidth, channels, view.pipeline_ranks);
      per_peer = view.pipeline_has_local_peer ? std::min(per_peer, remote) : remote;
    }
    for (bool remote : view.pipeline_peers_remote) {
      bytes += per_peer * nccl_connection_bytes(remote).count();
    }
  }
  return Bytes(bytes);
}

}  // namespace dtsim
