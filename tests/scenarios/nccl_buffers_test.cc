// NCCL's communicator buffers in a lowered step, worked by hand from NCCL's figures
// (sim/nccl_figures.h) for nodes of 8 H100s: 24 channels, a connection 9,633,792 bytes in
// the node and 9,109,504 over the network.
#include <gtest/gtest.h>

#include <string>

#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using test_support::prepare;

constexpr int64_t kLocal = 524288 + 4915200 + 4194304;
constexpr int64_t kRemote = 4915200 + 4194304;

nlohmann::json gpt(int nodes, int tp, int pp, int dp) {
  auto s = nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"device": "H100", "devices_per_node": 8,
                           "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "single_switch"}},
    "simulation": {"trace": false},
    "model": {"preset": "gpt3-1.3b", "layers": 4},
    "training": {"global_batch": 16, "micro_batch": 1, "seq_len": 1024, "precision": "bf16"}})");
  s["cluster"]["nodes"][0]["count"] = nodes;
  if (nodes == 1) s["cluster"].erase("fabric");
  s["parallelism"] = {{"tp", tp}, {"pp", pp}, {"dp", dp}};
  return s;
}

// The bytes of rank `rank`'s "nccl buffers" allocation, 0 if it has none.
int64_t nccl_bytes(const TaskGraph& g, int rank) {
  int64_t bytes = 0;
  for (const TaskView t : g.tasks()) {
    if (t.rank == rank && t.kind == TaskKind::kAlloc && t.name == "nccl buffers") {
      EXPECT_EQ(t.memory, MemoryCategory::kCommBuffers);
      bytes += t.bytes.count();
    }
  }
  return bytes;
}

TEST(NcclBuffers, ATensorParallelCommunicatorInsideANode) {
  const auto p = prepare(gpt(1, 8, 1, 1));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(nccl_bytes(p->lowered.graph, r), 24 * kLocal) << r;
}

TEST(NcclBuffers, ADataParallelCommunicatorAcrossNodesKeepsLlInHostMemory) {
  // dp 2 over two nodes: each rank's data-parallel partner is in the other node.
  const auto p = prepare(gpt(2, 8, 1, 2));
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 0), 24 * kLocal + 24 * kRemote);
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 15), 24 * kLocal + 24 * kRemote);
}

TEST(NcclBuffers, PipelinePeersInAnotherNodeGetChannelsByNicBandwidth) {
  // pp 2 over two nodes: one peer, remote; one 400 Gb/s NIC per node, so 50 GB/s over 14
  // per channel: 4 channels.
  const auto p = prepare(gpt(2, 8, 2, 1));
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 0), 24 * kLocal + 4 * kRemote);
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 8), 24 * kLocal + 4 * kRemote);
}

TEST(NcclBuffers, PipelinePeersInsideANodeGetNvlinkChannels) {
  // tp 4, pp 2 in one node: the peer is local, 32 p2p channels (2 x 18 NVLinks rounded up
  // to 64, the 24 channels to 32).
  const auto p = prepare(gpt(1, 4, 2, 1));
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 0), 24 * kLocal + 32 * kLocal);
}

TEST(NcclBuffers, CpuRanksRunNoNccl) {
  auto doc = gpt(1, 2, 1, 1);
  doc["cluster"]["nodes"][0]["device"] = "CPU";
  doc["cluster"]["nodes"][0]["devices_per_node"] = 2;
  doc["training"]["precision"] = "fp32";
  const auto p = prepare(doc);
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 0), 0);
}

TEST(NcclBuffers, ACustomDeviceSaysItsChannels) {
  auto doc = gpt(1, 8, 1, 1);
  doc["cluster"]["devices"] = nlohmann::json::parse(R"([{"name": "X", "kind": "gpu",
      "base": "H100", "efficiency": {"nccl_channels": 4}}])");
  doc["cluster"]["nodes"][0]["device"] = "X";
  const auto p = prepare(doc);
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 0), 4 * kLocal);
}

}  // namespace
}  // namespace dtsim
