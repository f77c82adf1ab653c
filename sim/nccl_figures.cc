// NCCL's channel counts and connection buffers, as its search and transport code sets them.
#include "sim/nccl_figures.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace dtsim {

namespace {

constexpr int kMaxChannels = 64;                      // MAXCHANNELS, src/include/device.h
constexpr int kSearchMaxChannels = kMaxChannels / 2;  // ringGraph->maxChannels, src/init.cc
constexpr double kPcieBandwidth = 12.0;               // PCI_BW, GB/s (src/graph/topo.h)
constexpr double kP2pPerChannelNetBandwidth = 14.0;   // NCCL_P2P_PER_CHANNEL_NET_BW, GB/s
constexpr int kP2pPeersPerBatch = 8;                  // NCCL_MAX_DEV_WORK_P2P_PER_BATCH

// Per-channel speeds the ring search tries inside a node (src/graph/search.cc), GB/s.
constexpr double kSpeeds[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                              9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
constexpr double kSm90Speeds[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr double kSm100Speeds[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0,
                                   40.0, 30.0, 24.0, 20.0, 19.0, 18.0};

std::span<const double> speeds_for(int sm) {
  if (sm >= 100) return kSm100Speeds;
  if (sm >= 90) return kSm90Speeds;
  return kSpeeds;
}

// GB/s per NVLink as NCCL's topology counts it (src/graph/topo.h ncclTopoNVLinkBw).
double nvlink_bandwidth(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm >= 70) return 20.0;
  return 18.0;
}

int pow2_up(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

Bytes nccl_connection_bytes(bool over_network) {
  return Bytes((over_network ? 0 : kNcclLlBufferBytes) + kNcclLl128BufferBytes +
               kNcclSimpleBufferBytes);
}

int nccl_collective_channels(int nvlink_links, int sm) {
  const double bandwidth = nvlink_links > 0 ? nvlink_links * nvlink_bandwidth(sm) : kPcieBandwidth;
  const std::span<const double> speeds = speeds_for(sm);
  size_t index = 0;
  while (speeds[index] > bandwidth && index + 1 < speeds.size()) ++index;
  int best_channels = 0;
  double best_speed = 0;
  for (;;) {
    const double speed = speeds[index];
    const int channels =
        std::min(kSearchMaxChannels, static_cast<int>(std::floor(bandwidth / speed)));
    if (channels * speed > best_channels * best_speed) {
      best_channels = channels;
      best_speed = speed;
    }
    if (best_channels * best_speed >= bandwidth) break;
    if (index + 1 >= speeds.size()) break;
    if (best_channels > 0 && speeds[index + 1] / best_speed <= 0.49) break;
    ++index;
  }
  int channels = std::max(best_channels, 1);
  // ncclTopoDupChannels.
  if (best_speed >= 25.0 && !(sm > 80 && best_speed < 50.0 && channels > 4)) {
    channels = std::min(2 * channels, kSearchMaxChannels);
  }
  // connectRings: "Duplication should be complete now".
  return std::min(kMaxChannels, 2 * channels);
}

int nccl_p2p_channels_per_local_peer(int nvlink_links, int collective_channels) {
  const int per_peer = 2 * std::max(1, nvlink_links);
  return std::min(pow2_up(per_peer), pow2_up(std::max(1, collective_channels)));
}

int nccl_p2p_channels_per_remote_peer(int local_nics, Bandwidth local_nic_bandwidth,
                                      int collective_channels, int communicator_ranks) {
  const int by_bandwidth = static_cast<int>(std::ceil(
      std::floor(local_nic_bandwidth.bytes_per_second() / 1e9) / kP2pPerChannelNetBandwidth));
  int per_peer = pow2_up(std::max({1, local_nics, by_bandwidth}));
  const int p2p_channels = pow2_up(std::max(1, collective_channels));
  const int batches = (communicator_ranks + kP2pPeersPerBatch - 1) / kP2pPeersPerBatch;
  while (per_peer * batches > p2p_channels && per_peer > 1) per_peer /= 2;
  return per_peer;
}

}  // namespace dtsim
