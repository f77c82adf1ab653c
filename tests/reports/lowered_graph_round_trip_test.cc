// A lowered-graph file holds every field of the TaskGraph: written and read back, a lowered
// step (layer granularity, pipeline, recomputation, data parallelism) is the same graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "reports/lowered_graph_writer.h"
#include "scenarios/lowered_graph_reader.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

TEST(LoweredGraphFile, RoundTripsEveryField) {
  const auto p = test_support::prepare(nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 2, "device": "H100", "devices_per_node": 8,
                           "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "single_switch"}},
    "simulation": {"trace": false, "granularity": "layer"},
    "model": {"preset": "gpt3-1.3b", "layers": 4},
    "training": {"global_batch": 16, "micro_batch": 1, "seq_len": 1024, "recompute": "full",
                 "precision": "fp16"},
    "parallelism": {"tp": 2, "pp": 2, "zero_stage": 1}})"));
  const TaskGraph& a = p->lowered.graph;
  std::stringstream file;
  write_lowered_graph(file, a, 16);
  std::string error;
  const std::optional<TaskGraph> b = read_lowered_graph(file, 16, error);
  ASSERT_TRUE(b) << error;
  ASSERT_EQ(a.num_tasks(), b->num_tasks());
  EXPECT_GT(a.num_transfers(), 0u);  // pp 2: the pipeline's sends say what they move
  EXPECT_EQ(a.num_transfers(), b->num_transfers());
  EXPECT_EQ(a.streams(), b->streams());
  int bound_ops = 0;  // ops of compute tasks that bind tensors
  std::set<uint32_t> micro_batches;
  for (TaskId id = 0; id < a.num_tasks(); ++id) {
    const TaskView x = a.task(id);
    const TaskView y = b->task(id);
    SCOPED_TRACE(std::string(x.name));
    ASSERT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.stream, y.stream);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.duration, y.duration);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.tag, y.tag);
    EXPECT_EQ(x.buffer, y.buffer);
    EXPECT_EQ(x.memory, y.memory);
    EXPECT_EQ(a.transfer(id), b->transfer(id));
    if (has_peer(x)) {
      EXPECT_EQ(x.peer, y.peer);
    }
    if (x.kind == TaskKind::kCollective) {
      EXPECT_EQ(x.collective, y.collective);
    }
    ASSERT_EQ(x.ops == kNoOps, y.ops == kNoOps);
    if (x.ops != kNoOps) {
      const auto xo = a.op_list(x.ops);
      const auto yo = b->op_list(y.ops);
      EXPECT_TRUE(std::equal(xo.begin(), xo.end(), yo.begin(), yo.end()));
      const auto xb = a.op_operands(x.ops);
      const auto yb = b->op_operands(y.ops);
      EXPECT_TRUE(std::equal(xb.begin(), xb.end(), yb.begin(), yb.end()));
      bound_ops += static_cast<int>(
          std::count_if(xb.begin(), xb.end(), [](const OpOperands& o) { return !o.empty(); }));
    }
    if (x.kind == TaskKind::kCompute && x.ops != kNoOps) micro_batches.insert(x.tag);
    EXPECT_EQ(std::vector<TaskId>(x.deps.begin(), x.deps.end()),
              std::vector<TaskId>(y.deps.begin(), y.deps.end()));
  }
  EXPECT_GT(bound_ops, 0);
  // Compute tasks name their micro-batch (4 per replica: 16 over dp 4), the optimizer none.
  EXPECT_TRUE(micro_batches.contains(kNoMicroBatch));
  EXPECT_TRUE(micro_batches.contains(3));
  ASSERT_EQ(a.collectives().size(), b->collectives().size());
  for (size_t c = 0; c < a.collectives().size(); ++c) {
    const CollectiveCall& x = a.collectives()[c];
    const CollectiveCall& y = b->collectives()[c];
    SCOPED_TRACE(x.label);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.algorithm, y.algorithm);
    EXPECT_NE(y.algorithm, CollectiveAlgorithm::kAuto);
    EXPECT_EQ(x.members, y.members);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(y.dtype, DType::kFp16);
    if (is_reducing(x.op)) {
      EXPECT_EQ(x.reduce, y.reduce);
    }
    EXPECT_EQ(x.label, y.label);
    EXPECT_EQ(x.analytical, y.analytical);
    EXPECT_EQ(x.calls, y.calls);
  }
}

TEST(LoweredGraphFile, AChunksTensorParallelTaskKeepsItsCalls) {
  // At chunk granularity one task stands for the chunk's per-layer exchanges.
  const auto p = test_support::prepare(nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 2,
                           "nic_bandwidth": "400Gbps"}],
                "fabric": {"kind": "none"}},
    "simulation": {"trace": false},
    "model": {"preset": "gpt3-1.3b", "layers": 4},
    "training": {"global_batch": 2, "micro_batch": 1, "seq_len": 256},
    "parallelism": {"tp": 2, "sequence_parallel": true}})"));
  const TaskGraph& a = p->lowered.graph;
  std::stringstream file;
  write_lowered_graph(file, a, 2);
  std::string error;
  const std::optional<TaskGraph> b = read_lowered_graph(file, 2, error);
  ASSERT_TRUE(b) << error;
  int many = 0;
  for (size_t c = 0; c < a.collectives().size(); ++c) {
    EXPECT_EQ(a.collectives()[c].calls, b->collectives()[c].calls);
    // 4 layers of two exchanges (after attention and after the MLP) and the vocabulary-
    // parallel embedding's: 9 a pass.
    if (a.collectives()[c].calls > 1) {
      ++many;
      EXPECT_EQ(a.collectives()[c].calls, 9) << a.collectives()[c].label;
    }
  }
  EXPECT_GT(many, 0);
}

}  // namespace
}  // namespace dtsim
