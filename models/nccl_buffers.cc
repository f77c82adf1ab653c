// NCCL's communicator buffers on one rank.
#include "models/nccl_buffers.h"

#include <algorithm>

#include "sim/nccl_figures.h"

namespace dtsim {

namespace {

int channels_of(const NcclCommunicatorView& c, const NcclRankView& view) {
  const DeviceEfficiency& e = view.device->efficiency;
  return c.spans_nodes ? nccl_network_channels(c.nics, view.nic_bandwidth, e.compute_capability)
                       : e.nccl_channels;
}

}  // namespace

Bytes nccl_buffer_bytes(const NcclRankView& view) {
  const DeviceSpec& device = *view.device;
  if (device.kind != DeviceKind::kGpu || device.efficiency.nccl_channels <= 0) return Bytes(0);
  int64_t bytes = 0;
  for (const NcclCommunicatorView& c : view.collectives) {
    bytes += channels_of(c, view) * nccl_channel_bytes(c.alone_in_node).count();
  }
  if (view.pipeline) {
    const int p2p = nccl_p2p_channels(channels_of(*view.pipeline, view));
    // Every peer gets the fewest channels any peer of the communicator gets.
    int per_peer = std::min(device.efficiency.nccl_p2p_channels, p2p);
    if (view.pipeline->spans_nodes) {
      per_peer = std::min(
          per_peer,
          nccl_p2p_channels_per_remote_peer(
              view.local_nics,
              Bandwidth::bytes_per_s(view.nic_bandwidth.bytes_per_second() * view.local_nics)));
    }
    // A peer in the node: a connection each way per channel, as a ring member's pair.
    bytes += view.pipeline_local_peers * per_peer * nccl_channel_bytes(false).count();
    // Peers in other nodes share one pool per direction.
    if (view.pipeline_remote_peers > 0) bytes += 2 * nccl_network_p2p_pool_bytes(p2p).count();
  }
  return Bytes(bytes);
}

}  // namespace dtsim
