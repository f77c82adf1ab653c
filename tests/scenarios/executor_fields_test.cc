// What a lowered step tells a real executor beyond durations: each collective call's
// element type, reduction and settled algorithm (none left `auto`), each allocation's
// category and the buffer that pairs it with its free, and the tensor each pipeline
// transfer moves.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "models/lowering.h"
#include "runner/scenario_runner.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using test_support::prepare;

nlohmann::json gpt(const std::string& precision) {
  auto s = nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 2, "device": "H100", "devices_per_node": 8,
                           "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "single_switch"}},
    "simulation": {"trace": false},
    "model": {"preset": "gpt3-1.3b", "layers": 4},
    "training": {"global_batch": 16, "micro_batch": 1, "seq_len": 1024},
    "parallelism": {"tp": 2, "zero_stage": 1}})");
  s["training"]["precision"] = precision;
  return s;
}

// The first call whose label starts with `prefix`.
const CollectiveCall& call(const TaskGraph& g, const std::string& prefix) {
  for (const CollectiveCall& c : g.collectives()) {
    if (c.label.rfind(prefix, 0) == 0) return c;
  }
  throw std::runtime_error("no call " + prefix);
}

TEST(CollectiveCalls, CarryTheirElementTypeAndReduction) {
  for (const auto& [precision, dtype] : std::map<std::string, DType>{
           {"fp16", DType::kFp16}, {"bf16", DType::kBf16}, {"fp32", DType::kFp32}}) {
    SCOPED_TRACE(precision);
    const auto p = prepare(gpt(precision));
    const TaskGraph& g = p->lowered.graph;
    // Tensor parallelism sums partial results; data parallelism averages gradients
    // (ZeRO-1: reduce-scattered) and gathers the updated parameters.
    const CollectiveCall& tp = call(g, "tp fwd");
    EXPECT_EQ(tp.op, CollectiveOp::kAllReduce);
    EXPECT_EQ(tp.reduce, ReduceOp::kSum);
    EXPECT_EQ(tp.dtype, dtype);
    const CollectiveCall& grads = call(g, "grad bucket");
    EXPECT_EQ(grads.op, CollectiveOp::kReduceScatter);
    EXPECT_EQ(grads.reduce, ReduceOp::kAvg);
    EXPECT_EQ(grads.dtype, dtype);
    EXPECT_EQ(call(g, "param gather").dtype, dtype);
  }
}

TEST(CollectiveCalls, AutoIsSettledAsTheRunWouldChooseIt) {
  const auto p = prepare(gpt("bf16"));
  for (const CollectiveCall& c : p->lowered.graph.collectives()) {
    EXPECT_NE(c.algorithm, CollectiveAlgorithm::kAuto) << c.label;
  }
  // The same step lowered without settling: its calls are auto, and its run is the same.
  models::LoweringInput in;
  in.cluster = &p->scenario.cluster;
  in.model = p->scenario.training->model;
  in.training = p->scenario.training->training;
  in.plan = p->scenario.training->plan;
  in.costs = &test_support::roofline();
  LoweredScenario raw = p->lowered;
  raw.graph = models::lower_training_step(in).graph;
  int autos = 0;
  for (const CollectiveCall& c : raw.graph.collectives()) {
    autos += c.algorithm == CollectiveAlgorithm::kAuto;
  }
  EXPECT_GT(autos, 0);
  const ScenarioRun settled = run_scenario(p->scenario, p->lowered);
  const ScenarioRun chosen = run_scenario(p->scenario, raw);
  EXPECT_EQ(settled.result.end, chosen.result.end);
  EXPECT_EQ(settled.result.events, chosen.result.events);
}

TEST(Allocations, CarryTheirCategoryAndPairWithTheirFrees) {
  auto doc = gpt("bf16");
  doc["training"]["recompute"] = "full";
  doc["parallelism"]["pp"] = 2;
  const auto p = prepare(doc);
  const TaskGraph& g = p->lowered.graph;
  EXPECT_TRUE(g.validate(16).empty());  // which checks every free against its alloc
  std::map<MemoryCategory, int> allocs;
  std::map<std::pair<int, uint32_t>, TaskView> live;
  for (const TaskView t : g.tasks()) {
    if (t.kind != TaskKind::kAlloc && t.kind != TaskKind::kFree) continue;
    EXPECT_NE(t.memory, MemoryCategory::kUnspecified) << t.name;
    EXPECT_NE(t.buffer, 0u) << t.name;
    if (t.kind == TaskKind::kAlloc) {
      ++allocs[t.memory];
      live.emplace(std::pair{t.rank, t.buffer}, t);
    } else {
      const auto it = live.find({t.rank, t.buffer});
      ASSERT_NE(it, live.end()) << t.name;
      EXPECT_EQ(it->second.memory, t.memory) << t.name;
      EXPECT_EQ(it->second.name, t.name);
      live.erase(it);
    }
  }
  // What stays allocated after the step: model states, buffers and workspace only.
  for (const auto& [key, t] : live) {
    EXPECT_NE(t.memory, MemoryCategory::kActivations) << t.name;
    EXPECT_NE(t.memory, MemoryCategory::kRecomputed) << t.name;
  }
  for (MemoryCategory c :
       {MemoryCategory::kWeights, MemoryCategory::kGradients, MemoryCategory::kOptimizerStates,
        MemoryCategory::kActivations, MemoryCategory::kRecomputed, MemoryCategory::kCommBuffers}) {
    EXPECT_GT(allocs[c], 0) << memory_category_name(c);
  }
  // Per rank, the weights, gradients and optimizer states add up to the role's states.
  double states = 0;
  for (const TaskView t : g.tasks()) {
    const bool model_state = t.memory == MemoryCategory::kWeights ||
                             t.memory == MemoryCategory::kGradients ||
                             t.memory == MemoryCategory::kOptimizerStates;
    if (t.rank == 0 && t.kind == TaskKind::kAlloc && model_state) {
      states += static_cast<double>(t.bytes.count());
    }
  }
  EXPECT_NEAR(states, p->lowered.training->step.roles[0].model_state_bytes, 3);
}

TEST(PipelineTransfers, SayWhichTensorOfWhichMicroBatchAndChunkTheyMove) {
  // pp 2 with 2 virtual stages: chunks 0..3 over the pipeline, boundaries 0..2.
  auto doc = gpt("bf16");
  doc["parallelism"]["pp"] = 2;
  doc["parallelism"]["virtual_stages"] = 2;
  doc["parallelism"]["schedule"] = "interleaved_1f1b";
  const auto p = prepare(doc);
  const TaskGraph& g = p->lowered.graph;
  const models::LoweredStep& step = p->lowered.training->step;
  const int micro_batches = step.micro_batches;
  ASSERT_GT(micro_batches, 1);
  // Per (sending rank, tensor, micro-batch, chunk): one send, and one recv at its peer.
  std::map<std::tuple<int, PipelineTensor, uint32_t, uint32_t>, int> sends, recvs;
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const TaskView t = g.task(id);
    if (t.kind != TaskKind::kSend && t.kind != TaskKind::kRecv) continue;
    const auto moved = g.transfer(id);
    ASSERT_TRUE(moved) << t.name;
    EXPECT_LT(moved->micro_batch, static_cast<uint32_t>(micro_batches)) << t.name;
    EXPECT_LT(moved->chunk, 3u) << t.name;  // the last chunk sends no activations on
    // The name says the same: "send act" / "recv act" forward, "grad" backward.
    const bool activations = t.name.find(" act ") != std::string_view::npos;
    EXPECT_EQ(moved->tensor,
              activations ? PipelineTensor::kActivations : PipelineTensor::kActivationGradients)
        << t.name;
    // The producing chunk k runs on stage k % pp: the sender forward, the receiver backward.
    const int producer = static_cast<int>(moved->chunk % 2);
    const int stage = step.roles[static_cast<size_t>(t.rank)].pp;
    const bool at_producer = (t.kind == TaskKind::kSend) == activations;
    EXPECT_EQ(stage, at_producer ? producer : (producer + 1) % 2) << t.name;
    const int sender = t.kind == TaskKind::kSend ? t.rank : t.peer;
    ++(t.kind == TaskKind::kSend
           ? sends
           : recvs)[{sender, moved->tensor, moved->micro_batch, moved->chunk}];
  }
  EXPECT_EQ(sends, recvs);
  // Every rank sends each of its boundary tensors once per micro-batch: rank 0 (stage 0)
  // the activations of chunks 0 and 2 and the gradients of chunk 1's output (chunk 2 runs
  // on stage 0, and so does the backward of chunk 2 whose input is chunk 1's output).
  int rank0 = 0;
  for (const auto& [key, n] : sends) {
    EXPECT_EQ(n, 1);
    if (std::get<0>(key) == 0) ++rank0;
  }
  EXPECT_EQ(rank0, 3 * micro_batches);
  EXPECT_TRUE(g.validate(16).empty());
}

}  // namespace
}  // namespace dtsim
