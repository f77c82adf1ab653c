// NCCL's channel counts and connection buffers, as its search and transport code sets them.
#include "sim/nccl_figures.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace dtsim {

namespace {

constexpr int kMaxChannels = 64;                         // MAXCHANNELS, src/include/device.h
constexpr int kSearchMaxChannels = kMaxChannels / 2;     // ringGraph->maxChannels, src/init.cc
constexpr double kPcieBandwidth = 12.0;                  // PCI_BW, GB/s (src/graph/topo.h)
constexpr double kP2pPerChannelNetBandwidth = 14.0;      // NCCL_P2P_PER_CHANNEL_NET_BW, GB/s
constexpr int64_t kSharedSteps = 16;                     // NCCL_SHARED_STEPS
constexpr int64_t kP2pNetChunkBytes = int64_t{1} << 17;  // NCCL_P2P_NET_CHUNKSIZE

// Per-channel speeds the ring search tries (src/graph/search.cc), GB/s.
constexpr double kIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                             9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
constexpr double kSm90Intra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr double kSm100Intra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0,
                                  40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr double kInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                             7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSm90Inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSm100Inter[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                  20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

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

int64_t allocated(int64_t bytes) {
  return (bytes + kNcclAllocationBytes - 1) / kNcclAllocationBytes * kNcclAllocationBytes;
}

struct Found {
  int channels = 0;
  double speed = 0;
};

// Pass 1 of ncclTopoCompute over `speeds`: `channels_at(speed)` channels fit at a speed.
template <typename ChannelsAt>
Found search(std::span<const double> speeds, double max_speed, double total,
             ChannelsAt channels_at) {
  size_t index = 0;
  while (speeds[index] > max_speed && index + 1 < speeds.size()) ++index;
  Found best;
  for (;;) {
    const double speed = speeds[index];
    const int channels = std::min(kSearchMaxChannels, channels_at(speed));
    if (channels * speed > best.channels * best.speed) best = {channels, speed};
    if (best.channels * best.speed >= total) break;
    if (index + 1 >= speeds.size()) break;
    if (best.channels > 0 && speeds[index + 1] / best.speed <= 0.49) break;
    ++index;
  }
  best.channels = std::max(best.channels, 1);
  return best;
}

// ncclTopoDupChannels, then connectRings' doubling.
Found doubled(Found f, int sm) {
  if (f.speed >= 25.0 && !(sm > 80 && f.speed < 50.0 && f.channels > 4)) {
    const int dup = std::min(2 * f.channels, kSearchMaxChannels);
    f.speed /= (dup + f.channels - 1) / f.channels;
    f.channels = dup;
  }
  f.channels = std::min(kMaxChannels, 2 * f.channels);
  return f;
}

}  // namespace

Bytes nccl_channel_bytes(bool over_network) {
  if (over_network) {
    return Bytes(allocated(kNcclLl128BufferBytes + kNcclSimpleBufferBytes) +
                 allocated(kNcclLlBufferBytes + kNcclLl128BufferBytes + kNcclSimpleBufferBytes));
  }
  // The small ncclSendMem and ncclRecvMem headers share the allocations.
  return Bytes(allocated(kNcclSimpleBufferBytes + 1) +
               allocated(kNcclLlBufferBytes + kNcclLl128BufferBytes + 1));
}

Bytes nccl_network_p2p_pool_bytes(int p2p_channels) {
  return Bytes(allocated(p2p_channels * kSharedSteps * kP2pNetChunkBytes));
}

int nccl_collective_channels(int nvlink_links, int sm) {
  const double bandwidth = nvlink_links > 0 ? nvlink_links * nvlink_bandwidth(sm) : kPcieBandwidth;
  const std::span<const double> speeds = sm >= 100  ? std::span<const double>(kSm100Intra)
                                         : sm >= 90 ? std::span<const double>(kSm90Intra)
                                                    : std::span<const double>(kIntra);
  const Found f = search(speeds, bandwidth, bandwidth, [&](double speed) {
    return static_cast<int>(std::floor(bandwidth / speed));
  });
  return doubled(f, sm).channels;
}

int nccl_network_channels(int nics, Bandwidth nic_bandwidth, int sm) {
  const double nic = nic_bandwidth.bytes_per_second() / 1e9;
  const int n = std::max(1, nics);
  const std::span<const double> speeds = sm >= 100  ? std::span<const double>(kSm100Inter)
                                         : sm >= 90 ? std::span<const double>(kSm90Inter)
                                                    : std::span<const double>(kInter);
  const Found f = search(speeds, nic, n * nic, [&](double speed) {
    return n * static_cast<int>(std::floor(nic / speed));
  });
  Found d = doubled(f, sm);
  // connect.cc: "Use 4 compute channels per search channel to reach peak BW on <8 PPN".
  if (sm >= 90 && d.speed > 45.0 && d.channels < 16) d.channels *= 2;
  return d.channels;
}

int nccl_p2p_channels(int collective_channels) {
  return std::min(kMaxChannels, pow2_up(std::max(1, collective_channels)));
}

int nccl_p2p_channels_per_local_peer(int nvlink_links, int p2p_channels) {
  return std::min(pow2_up(2 * std::max(1, nvlink_links)), p2p_channels);
}

int nccl_p2p_channels_per_remote_peer(int local_nics, Bandwidth local_nic_bandwidth) {
  if (local_nics <= 0) return 2;
  const int by_bandwidth = static_cast<int>(std::ceil(
      std::floor(local_nic_bandwidth.bytes_per_second() / 1e9) / kP2pPerChannelNetBandwidth));
  return pow2_up(std::max(local_nics, by_bandwidth));
}

}  // namespace dtsim
