// NCCL's channel counts and connection buffers against what NCCL's logs and its search
// code give for known nodes.
#include "sim/nccl_figures.h"

#include <gtest/gtest.h>

#include "sim/device_catalog.h"

namespace dtsim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(NcclFigures, AChannelsConnectionsAsAllocated) {
  // In a node: Simple on the sending side (4 MiB and a header: 6 MiB), LL and LL128 on
  // the receiving side (5.19 MiB: 6 MiB).
  EXPECT_EQ(nccl_channel_bytes(false).count(), 12 * kMiB);
  // Over the network: LL128 and Simple sending (8.69 MiB: 10), all three receiving (9.19
  // MiB: 10).
  EXPECT_EQ(nccl_channel_bytes(true).count(), 20 * kMiB);
  // A shared pool: 4 channels x 16 steps x 128 KiB.
  EXPECT_EQ(nccl_network_p2p_pool_bytes(4).count(), 8 * kMiB);
}

TEST(NcclFigures, ChannelsInANodeAsNcclLogsThem) {
  // NCCL's INFO line "N coll channels": 8 H800s (8 NVLinks, NVIDIA/nccl#892) 16; 8 H100s
  // (18 NVLinks, channels 00..23 in vllm-project/vllm#10453's log) 24.
  EXPECT_EQ(nccl_collective_channels(8, 90), 16);
  EXPECT_EQ(nccl_collective_channels(18, 90), 24);
}

TEST(NcclFigures, ChannelsInANodeAsTheSearchWorksThemOut) {
  // A100, 12 x 20 GB/s: 6 channels at 40 GB/s carry all 240; doubled twice.
  EXPECT_EQ(nccl_collective_channels(12, 80), 24);
  // V100, 6 x 20: 3 at 40 carry 120; doubled twice.
  EXPECT_EQ(nccl_collective_channels(6, 70), 12);
  // P100, 4 x 18 = 72: 1 at 40, 2 at 30, 3 at 20 (no better), 4 at 18 carry it all; below
  // 25 GB/s a channel the search does not double; connectRings does.
  EXPECT_EQ(nccl_collective_channels(4, 60), 8);
  // PCIe Gen3 (12 GB/s): one channel of 12, doubled once.
  EXPECT_EQ(nccl_collective_channels(0, 80), 2);
  // B200-class, 18 x 40.1 = 721.8: 8 at 90 carry 720 (9 at 80 and 16 at 45 no more);
  // doubled twice.
  EXPECT_EQ(nccl_collective_channels(18, 100), 32);
}

TEST(NcclFigures, ChannelsAcrossNodesFollowTheNics) {
  // One GPU a node on a 400 Gb/s NIC (50 GB/s): one channel at 48, doubled twice.
  EXPECT_EQ(nccl_network_channels(1, Bandwidth::gbps(400), 90), 4);
  // Two a node, a NIC each: 2 at 48, doubled twice; NCCL logs 8 coll channels for 4 H20s
  // on 2 nodes (NVIDIA/nccl#1189).
  EXPECT_EQ(nccl_network_channels(2, Bandwidth::gbps(400), 90), 8);
  // A100 on 200 Gb/s (25 GB/s): one channel at 24, below 25 not doubled by the search.
  EXPECT_EQ(nccl_network_channels(1, Bandwidth::gbps(200), 80), 2);
}

TEST(NcclFigures, PeerToPeerChannels) {
  EXPECT_EQ(nccl_p2p_channels(24), 32);
  EXPECT_EQ(nccl_p2p_channels(4), 4);
  // H800 node: 2 per NVLink = 16, as its log's "16 p2p channels per peer".
  EXPECT_EQ(nccl_p2p_channels_per_local_peer(8, nccl_p2p_channels(16)), 16);
  // H100: 36 rounds up to 64; at most the 32 p2p channels.
  EXPECT_EQ(nccl_p2p_channels_per_local_peer(18, nccl_p2p_channels(24)), 32);
  EXPECT_EQ(nccl_p2p_channels_per_local_peer(0, 2), 2);
  // One 400 Gb/s NIC: 50 GB/s over 14 per channel = 4; 100 Gb/s: one per NIC; none: 2.
  EXPECT_EQ(nccl_p2p_channels_per_remote_peer(1, Bandwidth::gbps(400)), 4);
  EXPECT_EQ(nccl_p2p_channels_per_remote_peer(1, Bandwidth::gbps(100)), 1);
  EXPECT_EQ(nccl_p2p_channels_per_remote_peer(0, Bandwidth::gbps(400)), 2);
}

TEST(NcclFigures, TheCatalogDerivesEachGpusFigures) {
  const auto figures = [](const char* name) {
    const DeviceEfficiency& e = find_builtin_device(name)->efficiency;
    return std::tuple{e.nccl_channels, e.nccl_p2p_channels, e.compute_capability};
  };
  EXPECT_EQ(figures("H100"), std::tuple(24, 32, 90));
  EXPECT_EQ(figures("A100-80GB"), std::tuple(24, 32, 80));
  EXPECT_EQ(figures("V100"), std::tuple(12, 16, 70));
  EXPECT_EQ(figures("P100"), std::tuple(8, 8, 60));
  EXPECT_EQ(figures("P40"), std::tuple(2, 2, 60));
  EXPECT_EQ(std::get<0>(figures("CPU")), 0);
}

}  // namespace
}  // namespace dtsim
