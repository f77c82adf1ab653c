// NCCL's communicator buffers in a lowered step, worked by hand from NCCL's figures
// (sim/nccl_figures.h) for nodes of 8 H100s and one 400 Gb/s NIC: 24 channels in a node, a
// channel's connections 12 MiB there and 20 MiB over the network.
#include <gtest/gtest.h>

#include <string>

#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using test_support::prepare;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kLocal = 12 * kMiB;
constexpr int64_t kRemote = 20 * kMiB;

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

TEST(NcclBuffers, ADataParallelCommunicatorAcrossNodesHasTheNicsChannels) {
  // dp 2 over two nodes: each rank's data-parallel partner is in the other node; one GPU a
  // node in that communicator, on the node's NIC: 4 channels over the network.
  const auto p = prepare(gpt(2, 8, 1, 2));
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 0), 24 * kLocal + 4 * kRemote);
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 15), 24 * kLocal + 4 * kRemote);
}

TEST(NcclBuffers, PipelinePeersInAnotherNodeShareOnePoolEachWay) {
  // pp 2 over two nodes: the pipeline communicator gets 4 channels as above, so 4 p2p
  // channels: a pool of 4 x 16 x 128 KiB each way.
  const auto p = prepare(gpt(2, 8, 2, 1));
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 0), 24 * kLocal + 2 * 8 * kMiB);
  EXPECT_EQ(nccl_bytes(p->lowered.graph, 8), 24 * kLocal + 2 * 8 * kMiB);
}

TEST(NcclBuffers, PipelinePeersInsideANodeGetNvlinkChannels) {
  // tp 4, pp 2 in one node: the peer is local, 32 p2p channels (2 x 18 NVLinks rounded up
  // to 64, at most the 24 channels rounded up, 32), a pair of connections on each.
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
