// NCCL's channel counts and connection buffers against what NCCL's logs and its search
// code give for known nodes.
#include "sim/nccl_figures.h"

#include <gtest/gtest.h>

#include "sim/device_catalog.h"

namespace dtsim {
namespace {

TEST(NcclFigures, AConnectionHoldsEachProtocolsBuffers) {
  // 512 KiB (LL) + 4,915,200 (LL128) + 4 MiB (Simple); LL is host memory over the network.
  EXPECT_EQ(nccl_connection_bytes(false).count(), 524288 + 4915200 + 4194304);
  EXPECT_EQ(nccl_connection_bytes(true).count(), 4915200 + 4194304);
}

TEST(NcclFigures, CollectiveChannelsAsNcclLogsThem) {
  // NCCL's INFO line "N coll channels": 8 H800s (8 NVLinks, NVIDIA/nccl#892) 16; 8 H100s
  // (18 NVLinks, channels 00..23 in vllm-project/vllm#10453's log) 24.
  EXPECT_EQ(nccl_collective_channels(8, 90), 16);
  EXPECT_EQ(nccl_collective_channels(18, 90), 24);
}

TEST(NcclFigures, CollectiveChannelsAsTheSearchWorksThemOut) {
  // A100, 12 x 20 GB/s: 6 channels at 40 GB/s carry all 240; doubled twice.
  EXPECT_EQ(nccl_collective_channels(12, 80), 24);
  // V100, 6 x 20: 3 at 40 carry 120; doubled twice.
  EXPECT_EQ(nccl_collective_channels(6, 70), 12);
  // P100, 4 x 18 = 72: 1 at 40, 2 at 30, 3 at 20 (no better), 4 at 18 carry it all; below
  // 25 GB/s a channel the search does not double; connectRings does.
  EXPECT_EQ(nccl_collective_channels(4, 60), 8);
  // PCIe only (12 GB/s): one channel of 12, doubled once.
  EXPECT_EQ(nccl_collective_channels(0, 80), 2);
  // B200-class, 18 x 40.1 = 721.8: 8 at 90 carry 720 (9 at 80 and 16 at 45 no more);
  // doubled twice.
  EXPECT_EQ(nccl_collective_channels(18, 100), 32);
}

TEST(NcclFigures, PeerToPeerChannelsPerPeer) {
  // H800 node: 2 per NVLink = 16, as its log's "16 p2p channels per peer".
  EXPECT_EQ(nccl_p2p_channels_per_local_peer(8, 16), 16);
  // H100: 36 rounds up to 64, the 24 channels to 32; the smaller.
  EXPECT_EQ(nccl_p2p_channels_per_local_peer(18, 24), 32);
  EXPECT_EQ(nccl_p2p_channels_per_local_peer(0, 2), 2);
  // One 400 Gb/s NIC per GPU: 50 GB/s over 14 per channel = 4; 8 ranks fit one batch.
  EXPECT_EQ(nccl_p2p_channels_per_remote_peer(1, Bandwidth::gbps(400), 24, 8), 4);
  // 100 Gb/s: 12 GB/s, one channel per NIC.
  EXPECT_EQ(nccl_p2p_channels_per_remote_peer(1, Bandwidth::gbps(100), 24, 8), 1);
  // 64 peers are 8 batches of 4 channels: 32, as many as the p2p channels; 128 are 16
  // batches, 64 too many, so 2 per peer.
  EXPECT_EQ(nccl_p2p_channels_per_remote_peer(1, Bandwidth::gbps(400), 24, 64), 4);
  EXPECT_EQ(nccl_p2p_channels_per_remote_peer(1, Bandwidth::gbps(400), 24, 128), 2);
}

TEST(NcclFigures, TheCatalogDerivesEachGpusFigures) {
  EXPECT_EQ(find_builtin_device("H100")->efficiency.nccl_channels, 24);
  EXPECT_EQ(find_builtin_device("H100")->efficiency.nccl_p2p_channels, 32);
  EXPECT_EQ(find_builtin_device("A100-80GB")->efficiency.nccl_channels, 24);
  EXPECT_EQ(find_builtin_device("V100")->efficiency.nccl_channels, 12);
  EXPECT_EQ(find_builtin_device("P40")->efficiency.nccl_channels, 2);
  EXPECT_EQ(find_builtin_device("CPU")->efficiency.nccl_channels, 0);
}

}  // namespace
}  // namespace dtsim
