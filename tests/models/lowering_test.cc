// Lowering of a training step: every plan type validates and runs, the collectives and
// pipeline messages each plan implies, bubbles, memory, mixed devices, plan errors.
#include "models/lowering.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "models/memory_model.h"
#include "models/placement.h"
#include "models/schedule.h"
#include "models/workload.h"
#include "sim/cluster_spec.h"
#include "sim/simulation.h"
#include "tests/sim/test_clusters.h"

namespace dtsim::models {
namespace {

using dtsim::testing::fabric;
using dtsim::testing::node_group;
using dtsim::testing::one_region;
using dtsim::testing::two_regions;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// ---------------------------------------------------------------------------------------
// Models, clusters, inputs.

ModelSpec gpt(int layers = 8, int64_t hidden = 512, int heads = 8, int64_t seq_len = 128) {
  ModelSpec s;
  s.name = "test-gpt";
  s.family = ModelFamily::kGpt;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.vocab = 1000;
  s.seq_len = seq_len;
  return s;
}

// Compute dominates: a block's forward is ~200 GFLOP at micro-batch 2 (24 b s h^2), far
// above the 8 MiB activation a pipeline send moves over NVLink.
ModelSpec compute_heavy_gpt() { return gpt(8, 2048, 16, 1024); }

ModelSpec moe() {
  ModelSpec s = gpt(4);
  s.name = "test-moe";
  s.family = ModelFamily::kMoe;
  s.ffn_hidden = 1024;
  s.experts = 4;
  s.top_k = 2;
  return s;
}

// An MLP backbone of 784 -> 256 -> 256 and a 100,000-class classifier.
ModelSpec classifier() {
  ModelSpec s;
  s.name = "test-classifier";
  s.family = ModelFamily::kClassifier;
  s.backbone = "mlp";
  s.layers = 2;
  s.hidden = 256;
  s.input_features = 784;
  s.classes = 100000;
  return s;
}

Cluster gpus(int nodes, int per_node, const char* device = "H100") {
  return build_cluster(
      one_region(node_group(nodes, per_node, device),
                 fabric(nodes > 1 ? FabricKind::kSingleSwitch : FabricKind::kNone)));
}

// One H100 node and one A100 node of one GPU each: rank 0 is the H100 (ranks are numbered
// node group by node group), about twice as fast per block under the roofline costs.
Cluster h100_and_a100() {
  ClusterSpec spec = one_region(node_group(1, 1, "H100"), fabric(FabricKind::kSingleSwitch));
  spec.regions[0].node_groups.push_back(node_group(1, 1, "A100-80GB"));
  return build_cluster(spec);
}

TrainingSetup training(int64_t global_batch, int64_t micro_batch = 1) {
  TrainingSetup t;
  t.global_batch = global_batch;
  t.micro_batch = micro_batch;
  return t;
}

const CostModel& costs() {
  static const RooflineCostModel roofline;
  return roofline;
}

LoweredStep lower(const Cluster& cluster, const ModelSpec& model, const ParallelPlan& plan,
                  const TrainingSetup& t, bool global_sync = true) {
  LoweringInput in;
  in.cluster = &cluster;
  in.model = model;
  in.training = t;
  in.plan = plan;
  in.costs = &costs();
  in.global_sync = global_sync;
  return lower_training_step(in);
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// When each task ran, by task id.
struct Timeline : SimObserver {
  void on_task(const TaskRecord& r) override {
    if (r.task >= spans.size()) spans.resize(r.task + 1);
    spans[r.task] = {r.start, r.end};
  }
  std::vector<std::pair<Time, Time>> spans;
};

struct Ran {
  RunResult result;
  Time last_pass_end;  // end of the last forward or backward compute task on any rank
  std::vector<std::pair<Time, Time>> spans;  // by task id
};

// The lowered step must validate and run to completion.
Ran run(const Cluster& cluster, const LoweredStep& step) {
  EXPECT_THAT(step.graph.validate(cluster.num_ranks()), IsEmpty());
  Simulation sim(cluster, SimulationOptions{});
  Timeline timeline;
  sim.add_observer(&timeline);
  Ran out{sim.run(step.graph), Time(), std::move(timeline.spans)};
  EXPECT_THAT(out.result.stalled, IsEmpty());
  out.spans.resize(step.graph.tasks().size(), {Time::infinite(), Time::infinite()});
  for (TaskId id = 0; id < out.spans.size(); ++id) {
    const TaskView t = step.graph.task(id);
    if (t.kind == TaskKind::kCompute &&
        (starts_with(t.name, "fwd") || starts_with(t.name, "bwd"))) {
      out.last_pass_end = std::max(out.last_pass_end, out.spans[id].second);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Graph queries.

std::vector<const CollectiveCall*> calls(const TaskGraph& g, std::string_view prefix) {
  std::vector<const CollectiveCall*> out;
  for (const CollectiveCall& c : g.collectives()) {
    if (starts_with(c.label, prefix)) out.push_back(&c);
  }
  return out;
}

int count_tasks(const TaskGraph& g, int rank, TaskKind kind, std::string_view prefix) {
  int n = 0;
  for (const TaskView t : g.tasks())
    n += t.rank == rank && t.kind == kind && starts_with(t.name, prefix);
  return n;
}

double total_bytes(const std::vector<const CollectiveCall*>& cs) {
  double sum = 0;
  for (const CollectiveCall* c : cs) sum += c->bytes.as_double();
  return sum;
}

Duration compute_time(const TaskGraph& g, int rank, std::string_view prefix) {
  Duration sum;
  for (const TaskView t : g.tasks()) {
    if (t.rank == rank && t.kind == TaskKind::kCompute && starts_with(t.name, prefix))
      sum += t.duration;
  }
  return sum;
}

Workload workload(const ModelSpec& m, int64_t micro_batch = 1) {
  return build_workload(m, WorkloadShape{micro_batch, 0, Precision::kBf16});
}

int64_t params_of(const Workload& w, int begin, int end) {
  int64_t p = 0;
  for (int i = begin; i < end; ++i) p += w.layers[i].params();
  return p;
}

// Routed-expert and other parameters of a workload.
std::pair<int64_t, int64_t> dense_and_expert(const Workload& w) {
  int64_t dense = 0, expert = 0;
  for (const Layer& l : w.layers) {
    for (const Op& op : l.ops) (op.expert ? expert : dense) += op.params;
  }
  return {dense, expert};
}

// ---------------------------------------------------------------------------------------
// Data parallelism and ZeRO.

TEST(LoweringDataParallel, AllReduceBucketsFollowTheBackwardPass) {
  const Cluster c = gpus(2, 2);
  const Workload w = workload(gpt());
  // Bucket = the bf16 gradients of exactly two blocks. Walking the backward pass from the
  // head: head + block.7 is short of it, + block.6 fills it; then blocks 5-4, 3-2, 1-0
  // fill one each, and the embedding goes alone: 5 buckets, which is ceil(G / bucket)
  // because head + embedding (1.1M parameters) are under two blocks (6.3M).
  const double block_grad = 2.0 * static_cast<double>(w.layers[1].params());
  const double grads = 2.0 * static_cast<double>(w.params());
  ParallelPlan plan;
  plan.bucket = Bytes(static_cast<int64_t>(2 * block_grad));
  const int buckets = static_cast<int>(std::ceil(grads / plan.bucket.as_double()));
  ASSERT_EQ(buckets, 5);

  const LoweredStep step = lower(c, gpt(), plan, training(4));
  EXPECT_EQ(step.plan.dp, 4);
  EXPECT_EQ(step.micro_batches, 1);
  EXPECT_EQ(step.samples_per_iteration, 4);
  EXPECT_EQ(step.tokens_per_iteration, 4 * 128);
  EXPECT_EQ(step.model_params, w.params());
  EXPECT_DOUBLE_EQ(step.model_flops_per_iteration, model_flops_per_iteration(w, 4));

  const auto grad = calls(step.graph, "grad bucket");
  ASSERT_EQ(static_cast<int>(grad.size()), buckets);
  for (const CollectiveCall* call : grad) {
    EXPECT_EQ(call->op, CollectiveOp::kAllReduce);
    EXPECT_EQ(call->members, (std::vector<int>{0, 1, 2, 3}));
  }
  // Every gradient byte is reduced once (up to rounding each bucket to whole bytes).
  EXPECT_NEAR(total_bytes(grad), grads, buckets);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(count_tasks(step.graph, r, TaskKind::kCollective, "grad bucket"), buckets) << r;
  }
  // ZeRO-0 gathers nothing.
  for (const CollectiveCall& call : step.graph.collectives()) {
    EXPECT_NE(call.op, CollectiveOp::kAllGather) << call.label;
  }
  run(c, step);
}

TEST(LoweringDataParallel, OneBucketWhenItHoldsEverything) {
  const Cluster c = gpus(2, 2);
  ParallelPlan plan;
  plan.bucket = GiB(1);
  const LoweredStep step = lower(c, gpt(), plan, training(4));
  EXPECT_EQ(calls(step.graph, "grad bucket").size(), 1u);
  run(c, step);
}

// The bucket tasks of `rank` and the backward parts before them, in emission order.
std::pair<std::vector<TaskId>, std::vector<TaskId>> buckets_and_parts(const TaskGraph& g,
                                                                      int rank) {
  std::vector<TaskId> buckets, parts;
  for (TaskId id = 0; id < g.tasks().size(); ++id) {
    const TaskView t = g.task(id);
    if (t.rank != rank) continue;
    if (t.kind == TaskKind::kCollective && starts_with(t.name, "grad bucket"))
      buckets.push_back(id);
    if (t.kind == TaskKind::kCompute && starts_with(t.name, "bwd")) parts.push_back(id);
  }
  return {buckets, parts};
}

TEST(LoweringDataParallel, OverlappedBucketsStartWhenTheirGradientsAreReady) {
  // Bucket j of the last micro-batch's backward follows backward part j, while the
  // backward goes on with part j + 1. Buckets of two blocks' bf16 gradients: 5 buckets
  // and 5 backward parts (m = 1), as worked out above.
  const Cluster c = gpus(2, 2);
  const Workload w = workload(gpt());
  ParallelPlan plan;
  plan.bucket = Bytes(2 * 2 * w.layers[1].params());
  const LoweredStep step = lower(c, gpt(), plan, training(4));
  const Ran ran = run(c, step);
  for (int r = 0; r < 4; ++r) {
    const auto [buckets, parts] = buckets_and_parts(step.graph, r);
    ASSERT_EQ(buckets.size(), 5u);
    ASSERT_EQ(parts.size(), 5u);
    for (size_t j = 0; j < buckets.size(); ++j) {
      EXPECT_GE(ran.spans[buckets[j]].first.seconds(), ran.spans[parts[j]].second.seconds())
          << r << " " << j;
    }
    // Overlap: the first bucket starts before the backward pass is over.
    EXPECT_LT(ran.spans[buckets[0]].first.seconds(), ran.spans[parts.back()].second.seconds()) << r;
  }
}

TEST(LoweringDataParallel, WithoutOverlapBucketsWaitForTheWholeBackward) {
  // overlap_grad_reduce false: no gradient is reduced before the backward pass has
  // produced all of them (and certainly not before it has produced that bucket's).
  const Cluster c = gpus(2, 2);
  ParallelPlan plan;
  plan.overlap_grad_reduce = false;
  plan.bucket = MiB(4);
  const LoweredStep step = lower(c, gpt(), plan, training(4));
  const Ran ran = run(c, step);
  for (int r = 0; r < 4; ++r) {
    const auto [buckets, parts] = buckets_and_parts(step.graph, r);
    ASSERT_GT(buckets.size(), 1u);
    Time first_start = Time::infinite();
    for (TaskId b : buckets) first_start = std::min(first_start, ran.spans[b].first);
    EXPECT_GE(first_start.seconds(), ran.spans[parts.back()].second.seconds())
        << "rank " << r << ": a gradient bucket starts before the backward pass ends";
  }
}

TEST(LoweringDataParallel, ZeroOneAndTwoReduceScatterThenGatherParameters) {
  const Cluster c = gpus(2, 2);
  const Workload w = workload(gpt());
  for (int zero : {1, 2}) {
    SCOPED_TRACE(zero);
    ParallelPlan plan;
    plan.zero_stage = zero;
    const LoweredStep step = lower(c, gpt(), plan, training(4));
    const auto grad = calls(step.graph, "grad bucket");
    ASSERT_FALSE(grad.empty());
    for (const CollectiveCall* call : grad) EXPECT_EQ(call->op, CollectiveOp::kReduceScatter);
    // After the optimizer step each rank gathers the updated bf16 weights: all of them.
    const auto gather = calls(step.graph, "param gather");
    ASSERT_EQ(gather.size(), 1u);
    EXPECT_EQ(gather[0]->op, CollectiveOp::kAllGather);
    EXPECT_EQ(gather[0]->members.size(), 4u);
    EXPECT_NEAR(gather[0]->bytes.as_double(), 2.0 * static_cast<double>(w.params()), 1);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(step.roles[r].params, w.params());
      EXPECT_NEAR(
          step.roles[r].model_state_bytes,
          model_state_bytes(w.params(), Precision::kBf16, Optimizer::kAdam, zero, 4).total(), 1);
    }
    run(c, step);
  }
}

TEST(LoweringZero3, GathersBeforeEveryPassAndScattersAfterEveryBackward) {
  const Cluster c = gpus(2, 2);
  ParallelPlan plan;
  plan.zero_stage = 3;
  const LoweredStep step = lower(c, gpt(), plan, training(8));  // m = 2 per replica
  ASSERT_EQ(step.micro_batches, 2);
  EXPECT_TRUE(calls(step.graph, "grad bucket").empty());
  EXPECT_TRUE(calls(step.graph, "param gather").empty());
  // FSDP works layer by layer: two forwards and two backwards gather every layer (each
  // has parameters), and each backward scatters every layer's gradients.
  const int layers = static_cast<int>(workload(gpt()).layers.size());
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(count_tasks(step.graph, r, TaskKind::kCollective, "zero3 gather"), 4 * layers) << r;
    EXPECT_EQ(count_tasks(step.graph, r, TaskKind::kCollective, "zero3 grad scatter"), 2 * layers) << r;
  }
  for (const CollectiveCall* call : calls(step.graph, "zero3 gather")) {
    EXPECT_EQ(call->op, CollectiveOp::kAllGather);
    EXPECT_EQ(call->members.size(), 4u);
  }
  for (const CollectiveCall* call : calls(step.graph, "zero3 grad scatter")) {
    EXPECT_EQ(call->op, CollectiveOp::kReduceScatter);
  }
  const Workload w = workload(gpt());
  EXPECT_NEAR(step.roles[0].model_state_bytes,
              model_state_bytes(w.params(), Precision::kBf16, Optimizer::kAdam, 3, 4).total(), 1);
  run(c, step);
}

// Whether any of rank `r`'s ZeRO-3 collectives runs while one of its kernels does.
bool zero3_overlaps_compute(const TaskGraph& g, const Ran& ran, int r) {
  for (TaskId a = 0; a < g.num_tasks(); ++a) {
    const TaskView comm = g.task(a);
    if (comm.rank != r || comm.kind != TaskKind::kCollective || !starts_with(comm.name, "zero3")) continue;
    const auto [cs, ce] = ran.spans[a];
    for (TaskId b = 0; b < g.num_tasks(); ++b) {
      const TaskView k = g.task(b);
      if (k.rank != r || k.kind != TaskKind::kCompute) continue;
      const auto [ks, ke] = ran.spans[b];
      if (ks < ce && cs < ke) return true;
    }
  }
  return false;
}

TEST(LoweringZero3, PrefetchOverlapsGathersWithComputeUnlessTurnedOff) {
  // Default: gathers run ahead of the layers on the data-parallel stream. DeepSpeed 0.3's
  // ZeRO-3 (overlap_param_gather false) synchronizes before every gather, so compute and
  // communication take turns and the step is longer.
  const Cluster c = gpus(2, 2);
  ParallelPlan plan;
  plan.zero_stage = 3;
  const LoweredStep prefetched = lower(c, gpt(), plan, training(4));
  plan.overlap_param_gather = false;
  const LoweredStep serial = lower(c, gpt(), plan, training(4));
  const Ran with = run(c, prefetched);
  const Ran without = run(c, serial);
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(zero3_overlaps_compute(prefetched.graph, with, r)) << r;
    EXPECT_FALSE(zero3_overlaps_compute(serial.graph, without, r)) << r;
    EXPECT_EQ(count_tasks(serial.graph, r, TaskKind::kCollective, "zero3 gather"),
              count_tasks(prefetched.graph, r, TaskKind::kCollective, "zero3 gather"));
  }
  EXPECT_GT(without.result.end.seconds(), with.result.end.seconds());
}

TEST(LoweringZero3, OneDataParallelRankNeedsNoGatherBuffers) {
  // ZeRO-3 over a data-parallel group of one shards nothing and gathers nothing, so the
  // rank's memory is its model states and activations, as without ZeRO (pp 2, dp 1).
  const Cluster c = gpus(1, 2);
  ParallelPlan plan;
  plan.pp = 2;
  plan.zero_stage = 3;
  const LoweredStep step = lower(c, gpt(), plan, training(2));
  ASSERT_EQ(step.plan.dp, 1);
  EXPECT_TRUE(calls(step.graph, "zero3").empty());
  const Ran ran = run(c, step);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(ran.result.ranks[r].peak_memory.as_double(),
                step.roles[r].model_state_bytes + step.roles[r].workspace_bytes +
                    step.roles[r].activation_bytes_peak + step.roles[r].comm_buffer_bytes,
                5)
        << r;
  }
}

TEST(LoweringZero3, GatherMovesTheModelOncePerPass) {
  // A collective's bytes are the per-rank buffer (nccl-tests' size): for an all-gather its
  // output, here every bf16 weight of the chunk, exactly what ZeRO-1's "param gather"
  // moves once per step; for the reduce-scatter its input, every bf16 gradient. The
  // dp size must not multiply them again.
  const Cluster c = gpus(2, 2);
  const Workload w = workload(gpt());
  ParallelPlan plan;
  plan.zero_stage = 3;
  const LoweredStep step = lower(c, gpt(), plan, training(4));
  // Summed over a pass's layers (one call per layer, each rounded to a whole byte).
  const double weights = 2.0 * static_cast<double>(w.params());
  const double layers = static_cast<double>(w.layers.size());
  for (const char* pass : {"zero3 gather fwd mb0 ", "zero3 gather bwd mb0 ", "zero3 grad scatter bwd mb0 "}) {
    double sum = 0;
    for (const CollectiveCall* call : calls(step.graph, pass)) sum += call->bytes.as_double();
    EXPECT_NEAR(sum, weights, layers) << pass;
  }
}

// DeepSpeed's way (2021): one gather per parameter tensor above the persistence threshold
// (per GPT block: QKV, projection, FC1 and FC2; LayerNorms and biases stay whole), each
// followed by one copy kernel per rank, and gradients all-reduced. The gathered bytes are
// the same, the calls and kernels more, and the step longer.
TEST(LoweringZero3, DeepSpeedStyleGathersTensorByTensor) {
  const Cluster c = gpus(2, 2);
  const ModelSpec model = gpt(2);  // hidden 512: LayerNorms hold 1,024, the GEMMs 262,656+
  ParallelPlan plan;
  plan.zero_stage = 3;
  plan.overlap_param_gather = false;
  const LoweredStep flat = lower(c, model, plan, training(4));
  plan.per_parameter_gather = true;
  plan.persistence_threshold = 100000;
  plan.gather_copies_per_rank = true;
  plan.grad_all_reduce = true;
  const LoweredStep tensors = lower(c, model, plan, training(4));
  const auto blocks = [](const TaskGraph& g, const char* pass) {
    int n = 0;
    for (const CollectiveCall* call : calls(g, pass))
      n += call->label.find(" l1") != std::string::npos;
    return n;
  };
  // Block 0 is layer 1 (after the embedding): one flat call, or four tensor calls.
  EXPECT_EQ(blocks(flat.graph, "zero3 gather fwd mb0 "), 1);
  EXPECT_EQ(blocks(tensors.graph, "zero3 gather fwd mb0 "), 4);
  // The word table (1,000 x 512) is gathered, the position table (128 x 512) and the
  // LayerNorms stay whole; every block's bytes but the LayerNorms' are gathered (a GEMM's
  // bias travels with its weight: the workload holds them as one tensor).
  double flat_bytes = 0, tensor_bytes = 0;
  for (const CollectiveCall* call : calls(flat.graph, "zero3 gather fwd mb0 "))
    flat_bytes += call->bytes.as_double();
  for (const CollectiveCall* call : calls(tensors.graph, "zero3 gather fwd mb0 "))
    tensor_bytes += call->bytes.as_double();
  EXPECT_LT(tensor_bytes, flat_bytes);
  EXPECT_GT(tensor_bytes, 0.99 * flat_bytes);
  EXPECT_TRUE(calls(tensors.graph, "zero3 grad scatter").empty());
  ASSERT_FALSE(calls(tensors.graph, "zero3 grad all-reduce").empty());
  for (const CollectiveCall* call : calls(tensors.graph, "zero3 grad all-reduce")) {
    EXPECT_EQ(call->op, CollectiveOp::kAllReduce);
  }
  // The LayerNorms (1,024 elements each, two per block and one in the head) and the
  // position table (128 x 512) stay whole: their weights and gradients are on every rank,
  // three quarters more than their shard.
  const double persistent = 5 * 1024.0 + 128 * 512;
  EXPECT_NEAR(tensors.roles[0].model_state_bytes - flat.roles[0].model_state_bytes,
              persistent * (2 + 2) * 0.75, 1);
  // Each gather is followed by its copies: one kernel per rank of the group of 4.
  const RooflineCostModel roofline;
  int copies = 0;
  for (const TaskView t : tensors.graph.tasks()) {
    if (t.rank != 0 || t.name.find(" copies") == std::string_view::npos) continue;
    ++copies;
    ASSERT_EQ(t.deps.size(), 1u);
    const TaskView gather = tensors.graph.task(t.deps[0]);
    EXPECT_EQ(gather.kind, TaskKind::kCollective);
    const CollectiveCall& call = tensors.graph.collectives()[gather.collective];
    const auto ops = tensors.graph.op_list(t.ops);
    ASSERT_EQ(ops.size(), 4u);
    EXPECT_EQ(ops[0].kind, KernelKind::kCopy);
    EXPECT_NEAR(ops[0].bytes, 2 * call.bytes.as_double() / 4, 1);
    EXPECT_NEAR(t.duration.seconds(),
                4 * launched_time(roofline, ops[0], *c.devices[0].spec).seconds(), 1e-9);
  }
  EXPECT_EQ(copies, count_tasks(tensors.graph, 0, TaskKind::kCollective, "zero3 gather"));
  EXPECT_GT(run(c, tensors).result.end, run(c, flat).result.end);
  // With prefetch the copies follow their gather on the data-parallel stream, off the
  // compute stream.
  plan.overlap_param_gather = true;
  const LoweredStep prefetched = lower(c, model, plan, training(4));
  int on_gather_stream = 0;
  for (const TaskView t : prefetched.graph.tasks()) {
    if (t.name.find(" copies") == std::string_view::npos) continue;
    EXPECT_EQ(t.stream, prefetched.graph.task(t.deps[0]).stream);
    ++on_gather_stream;
  }
  EXPECT_GT(on_gather_stream, 0);
  run(c, prefetched);
}

// ---------------------------------------------------------------------------------------
// Tensor, sequence, context and expert parallelism.

TEST(LoweringTensorParallel, CollectivesPerPassAnalyticalInsideANode) {
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.tp = 4;
  const LoweredStep step = lower(c, gpt(), plan, training(2));  // dp 1, m = 2
  ASSERT_EQ(step.plan.dp, 1);
  ASSERT_EQ(step.micro_batches, 2);
  for (std::string_view label : {"tp fwd", "tp bwd"}) {
    const auto tp = calls(step.graph, label);
    ASSERT_EQ(tp.size(), 2u) << label;  // one per micro-batch, shared by the group
    for (const CollectiveCall* call : tp) {
      EXPECT_EQ(call->op, CollectiveOp::kAllReduce);
      EXPECT_EQ(call->members, (std::vector<int>{0, 1, 2, 3}));
      EXPECT_TRUE(call->analytical) << call->label;
      EXPECT_GT(call->bytes.count(), 0);
    }
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(count_tasks(step.graph, r, TaskKind::kCollective, label), 2);
  }
  // A quarter of the split weights each (LayerNorms and biases of row-parallel GEMMs stay
  // whole, so a bit more than a quarter of the model).
  const Workload w = workload(gpt());
  EXPECT_GT(step.roles[0].params, w.params() / 4);
  EXPECT_LT(step.roles[0].params, w.params() / 4 + w.params() / 50);
  run(c, step);

  plan.tp_comm_analytical = false;
  const LoweredStep flow = lower(c, gpt(), plan, training(2));
  ASSERT_EQ(calls(flow.graph, "tp ").size(), 4u);
  for (const CollectiveCall* call : calls(flow.graph, "tp ")) EXPECT_FALSE(call->analytical);
}

TEST(LoweringTensorParallel, AcrossNodesIsSimulatedFlowByFlow) {
  const Cluster c = gpus(2, 2);
  ParallelPlan plan;
  plan.tp = 4;
  const LoweredStep across = lower(c, gpt(), plan, training(1));
  ASSERT_FALSE(calls(across.graph, "tp ").empty());
  for (const CollectiveCall* call : calls(across.graph, "tp ")) EXPECT_FALSE(call->analytical);
  run(c, across);
  // tp 2 keeps each group inside a node: {0, 1} and {2, 3}.
  plan.tp = 2;
  const LoweredStep inside = lower(c, gpt(), plan, training(2));
  std::set<std::vector<int>> groups;
  for (const CollectiveCall* call : calls(inside.graph, "tp ")) {
    EXPECT_TRUE(call->analytical);
    groups.insert(call->members);
  }
  EXPECT_EQ(groups, (std::set<std::vector<int>>{{0, 1}, {2, 3}}));
  run(c, inside);
}

TEST(LoweringTensorParallel, SequenceParallelKeepsLessActivation) {
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.tp = 4;
  const LoweredStep plain = lower(c, gpt(), plan, training(2));
  plan.sequence_parallel = true;
  const LoweredStep sp = lower(c, gpt(), plan, training(2));
  EXPECT_FALSE(calls(sp.graph, "tp fwd").empty());
  // LayerNorm, dropout and residual activations divide by tp too (Korthikanti et al.).
  EXPECT_LT(sp.roles[0].activation_bytes_peak, plain.roles[0].activation_bytes_peak);
  // And their kernels: less compute per rank.
  EXPECT_LT(compute_time(sp.graph, 0, "fwd"), compute_time(plain.graph, 0, "fwd"));
  run(c, sp);
}

TEST(LoweringTensorParallel, OverlappedCollectivesRunAlongsideThePass) {
  const Cluster c = gpus(2, 4);  // pp 2 across the nodes, tp 4 inside each
  ParallelPlan plan;
  plan.tp = 4;
  plan.pp = 2;
  plan.sequence_parallel = true;
  const LoweredStep serial = lower(c, gpt(), plan, training(4));
  plan.tp_comm_overlap = true;
  const LoweredStep overlapped = lower(c, gpt(), plan, training(4));
  // The same collectives, now on their own stream, waiting for what the pass waits for
  // rather than for the pass.
  ASSERT_EQ(calls(overlapped.graph, "tp ").size(), calls(serial.graph, "tp ").size());
  const TaskGraph& g = overlapped.graph;
  int seen = 0;
  for (TaskId id = 0; id < g.tasks().size(); ++id) {
    const TaskView t = g.task(id);
    if (t.kind != TaskKind::kCollective || !starts_with(t.name, "tp ")) continue;
    ++seen;
    EXPECT_EQ(g.streams()[t.stream], "tp_overlap") << t.name;
    const std::string pass = (starts_with(t.name, "tp fwd") ? "fwd" : "bwd") + std::string(t.name.substr(6));
    for (TaskId other = 0; other < g.tasks().size(); ++other) {
      const TaskView p = g.task(other);
      if (p.rank != t.rank || p.kind != TaskKind::kCompute || p.name != pass) continue;
      for (TaskId d : p.deps) {
        EXPECT_NE(std::find(t.deps.begin(), t.deps.end(), d), t.deps.end()) << t.name;
      }
      EXPECT_EQ(std::find(t.deps.begin(), t.deps.end(), other), t.deps.end()) << t.name;
    }
  }
  EXPECT_GT(seen, 0);
  // Every pipeline send waits for the pass's collective as well as its kernels.
  for (TaskId id = 0; id < g.tasks().size(); ++id) {
    const TaskView t = g.task(id);
    if (t.kind != TaskKind::kSend) continue;
    bool waits_for_tp = false;
    for (TaskId d : t.deps) waits_for_tp |= starts_with(g.task(d).name, "tp ");
    EXPECT_TRUE(waits_for_tp) << t.name;
  }
  // Hiding the collectives behind the kernels shortens the step; it cannot beat the
  // kernels alone.
  const Ran ran_serial = run(c, serial);
  const Ran ran_overlapped = run(c, overlapped);
  EXPECT_LT(ran_overlapped.result.end, ran_serial.result.end);
  EXPECT_LT(ran_overlapped.result.ranks[0].exposed_communication,
            ran_serial.result.ranks[0].exposed_communication);
}

// Without a pipeline there are no sends: the next pass on the rank is what waits for the
// previous pass's collective, and each collective starts only once the pass before its own
// has left the compute stream.
TEST(LoweringTensorParallel, OverlappedCollectiveHoldsTheNextPass) {
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.tp = 4;
  plan.sequence_parallel = true;
  plan.tp_comm_overlap = true;
  const LoweredStep step = lower(c, gpt(), plan, training(2));  // dp 1, 2 micro-batches
  const TaskGraph& g = step.graph;
  // Under sequence parallelism each exchange is a reduce-scatter, then an all-gather.
  std::vector<TaskId> passes, firsts, lasts;  // rank 0, in emission order
  for (TaskId id = 0; id < g.tasks().size(); ++id) {
    const TaskView t = g.task(id);
    if (t.rank != 0) continue;
    if (t.kind == TaskKind::kCompute && (starts_with(t.name, "fwd ") || starts_with(t.name, "bwd ")) &&
        t.name.find(" part ") == std::string::npos) {
      passes.push_back(id);
    }
    if (t.kind == TaskKind::kCollective && starts_with(t.name, "tp ")) {
      (t.name.ends_with(" reduce_scatter") ? firsts : lasts).push_back(id);
      EXPECT_TRUE(t.name.ends_with(" reduce_scatter") || t.name.ends_with(" all_gather")) << t.name;
    }
  }
  ASSERT_GE(passes.size(), 3u);
  ASSERT_EQ(firsts.size(), passes.size());
  ASSERT_EQ(lasts.size(), passes.size());
  for (size_t i = 1; i < passes.size(); ++i) {
    const auto& deps = g.task(passes[i]).deps;
    EXPECT_NE(std::find(deps.begin(), deps.end(), lasts[i - 1]), deps.end())
        << g.task(passes[i]).name;
    const auto& tp_deps = g.task(firsts[i]).deps;
    EXPECT_NE(std::find(tp_deps.begin(), tp_deps.end(), passes[i - 1]), tp_deps.end())
        << g.task(firsts[i]).name;
  }
  const Ran ran = run(c, step);
  for (size_t i = 1; i < passes.size(); ++i) {
    EXPECT_GE(ran.spans[firsts[i]].first, ran.spans[passes[i - 1]].second);
    EXPECT_GE(ran.spans[lasts[i]].first, ran.spans[firsts[i]].second);
    EXPECT_GE(ran.spans[passes[i]].first, ran.spans[lasts[i - 1]].second);
  }
}

TEST(LoweringContextParallel, GathersKeysAndValuesOverTheCpGroup) {
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.cp = 2;
  const LoweredStep step = lower(c, gpt(), plan, training(4));  // dp 2, m = 2
  ASSERT_EQ(step.plan.dp, 2);
  ASSERT_EQ(step.micro_batches, 2);
  // cp is the second-innermost axis: groups {0, 1} and {2, 3}.
  for (const CollectiveCall* call : calls(step.graph, "cp kv gather")) {
    EXPECT_EQ(call->op, CollectiveOp::kAllGather);
    EXPECT_EQ(call->members.size(), 2u);
    EXPECT_EQ(call->members[1], call->members[0] + 1);
  }
  for (const CollectiveCall* call : calls(step.graph, "cp kv grad scatter")) {
    EXPECT_EQ(call->op, CollectiveOp::kReduceScatter);
  }
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(count_tasks(step.graph, r, TaskKind::kCollective, "cp kv gather"), 2) << r;
    EXPECT_EQ(count_tasks(step.graph, r, TaskKind::kCollective, "cp kv grad scatter"), 2) << r;
  }
  // Gradients are averaged over data and context parallel ranks together.
  const auto grad = calls(step.graph, "grad bucket");
  ASSERT_FALSE(grad.empty());
  for (const CollectiveCall* call : grad) EXPECT_EQ(call->members.size(), 4u);
  run(c, step);
}

TEST(LoweringContextParallel, KeyValueGatherIsPerTensorShard) {
  // Each block's K and V: 128 tokens x 2 x 512 x 2 bytes = 256 KiB, so 8 blocks gather
  // 2 MiB per micro-batch (the all-gather's output: every CP rank's share, all heads).
  // With tp 2 a rank holds and attends over half the heads, so its CP group gathers
  // half of that, as in Megatron-LM where CP runs inside each TP rank's head shard.
  const Cluster c = gpus(1, 4);
  const double per_block = 128.0 * 2 * 512 * 2;
  ParallelPlan plan;
  plan.cp = 2;
  const LoweredStep cp_only = lower(c, gpt(), plan, training(2));
  const auto gather = calls(cp_only.graph, "cp kv gather");
  ASSERT_FALSE(gather.empty());
  EXPECT_NEAR(gather[0]->bytes.as_double(), 8 * per_block, 1);
  plan.tp = 2;
  const LoweredStep with_tp = lower(c, gpt(), plan, training(1));
  const auto gather_tp = calls(with_tp.graph, "cp kv gather");
  ASSERT_FALSE(gather_tp.empty());
  EXPECT_NEAR(gather_tp[0]->bytes.as_double(), 8 * per_block / 2, 1);
  run(c, with_tp);
}

TEST(LoweringExpertParallel, AllToAllOverTheEpGroupAndExpertsDivided) {
  const Cluster c = gpus(1, 4);
  const auto [dense, expert] = dense_and_expert(workload(moe()));
  ASSERT_GT(expert, 0);
  ParallelPlan plan;
  plan.ep = 2;
  const LoweredStep step = lower(c, moe(), plan, training(8));  // dp 4, m = 2
  ASSERT_EQ(step.micro_batches, 2);
  for (std::string_view label : {"ep all-to-all fwd", "ep all-to-all bwd"}) {
    const auto a2a = calls(step.graph, label);
    ASSERT_FALSE(a2a.empty()) << label;
    for (const CollectiveCall* call : a2a) {
      EXPECT_EQ(call->op, CollectiveOp::kAllToAll);
      EXPECT_EQ(call->members.size(), 2u);
    }
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(count_tasks(step.graph, r, TaskKind::kCollective, label), 2);
  }
  // Replicas 0 and 1 split the experts; replicas 0 and 2 hold the same half and reduce
  // its gradients together.
  std::set<std::vector<int>> expert_groups;
  for (const CollectiveCall* call : calls(step.graph, "expert grads"))
    expert_groups.insert(call->members);
  EXPECT_EQ(expert_groups, (std::set<std::vector<int>>{{0, 2}, {1, 3}}));
  // Dense gradients still over all four.
  for (const CollectiveCall* call : calls(step.graph, "grad bucket"))
    EXPECT_EQ(call->members.size(), 4u);
  EXPECT_NEAR(total_bytes(calls(step.graph, "grad bucket")), 2.0 * static_cast<double>(dense), 8);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(step.roles[r].params, dense + expert / 2) << r;
  run(c, step);

  plan.ep = 1;
  const LoweredStep no_ep = lower(c, moe(), plan, training(8));
  EXPECT_EQ(no_ep.roles[0].params, dense + expert);
  EXPECT_TRUE(calls(no_ep.graph, "ep ").empty());
}

// Megatron-Core's expert rank generator on tp 2 x dp 4 (rank = tp + 2 dp): the stage's
// ranks regrouped as etp x ep x edp, tensor-parallel index first.
TEST(LoweringExpertParallel, ExpertGroupsFoldOverTensorAndDataParallelRanks) {
  const Placement pl(4, 1, 2, 1, ParallelPlan{}.axis_order, {});
  const RankCoords rank3 = pl.coords(3);  // tp 1, dp 1
  // etp = tp: replicas 0 and 1 split the experts (same tp index); 0 and 2 hold the same.
  Placement::ExpertGroups g = pl.expert_groups(rank3, 2, 2);
  EXPECT_EQ(g.tensor, (std::vector<int>{2, 3}));
  EXPECT_EQ(g.expert, (std::vector<int>{1, 3}));
  EXPECT_EQ(pl.expert_data_group(rank3, 2, 2), (std::vector<int>{3, 7}));
  // etp 1, ep 4: tensor-parallel peers dispatch to one another.
  g = pl.expert_groups(rank3, 1, 4);
  EXPECT_EQ(g.tensor, (std::vector<int>{3}));
  EXPECT_EQ(g.expert, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(pl.expert_data_group(rank3, 1, 4), (std::vector<int>{3, 7}));
  // etp 1, ep 8: the whole stage is one expert-parallel group.
  g = pl.expert_groups(rank3, 1, 8);
  EXPECT_EQ(g.expert, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(pl.expert_data_group(rank3, 1, 8), (std::vector<int>{3}));
  // Context parallelism sits between tp and dp in the index (cp 2 x dp 2, tp 1).
  const Placement cp(2, 1, 1, 2, ParallelPlan{}.axis_order, {});
  EXPECT_EQ(cp.expert_groups(cp.coords(0), 1, 2).expert, (std::vector<int>{0, 1}));
}

// Folded experts on 8 GPUs, tp 2 with sequence parallelism, dp 4, ep 4: with etp 1 the
// experts are whole on each rank (a quarter of them), the dispatch crosses tensor-parallel
// peers and no expert-tensor-parallel exchange is made; with etp 2 (the default) the
// gathers and scatters run over the tensor-parallel pair and the experts are halved.
TEST(LoweringExpertParallel, ExpertTensorParallelismFoldsTheExpertLayers) {
  const Cluster c = gpus(1, 8);
  const auto [dense, expert] = dense_and_expert(workload(moe()));
  ParallelPlan plan;
  plan.tp = 2;
  plan.sequence_parallel = true;
  plan.ep = 4;
  plan.etp = 1;
  const LoweredStep folded = lower(c, moe(), plan, training(8));
  EXPECT_EQ(folded.plan.etp, 1);
  for (const CollectiveCall* call : calls(folded.graph, "ep all-to-all"))
    EXPECT_EQ(call->members.size(), 4u) << call->label;
  EXPECT_TRUE(calls(folded.graph, "etp ").empty());
  std::set<std::vector<int>> edp;
  for (const CollectiveCall* call : calls(folded.graph, "expert grads")) edp.insert(call->members);
  EXPECT_EQ(edp, (std::set<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Dense weights split over tp, the rank's experts whole.
  EXPECT_NEAR(static_cast<double>(folded.roles[0].params),
              static_cast<double>(dense) / 2 + static_cast<double>(expert) / 4,
              static_cast<double>(dense) * 0.01);
  run(c, folded);

  plan.etp = 0;
  const LoweredStep even = lower(c, moe(), plan, training(8));
  EXPECT_EQ(even.plan.etp, 2);
  const auto gathers = calls(even.graph, "etp gather");
  ASSERT_FALSE(gathers.empty());
  for (const CollectiveCall* call : gathers) {
    EXPECT_EQ(call->op, CollectiveOp::kAllGather);
    EXPECT_EQ(call->members.size(), 2u);
  }
  for (const CollectiveCall* call : calls(even.graph, "etp scatter"))
    EXPECT_EQ(call->op, CollectiveOp::kReduceScatter);
  EXPECT_LT(even.roles[0].params, folded.roles[0].params);
  run(c, even);
}

TEST(LoweringExpertParallel, ZeroOneGathersExpertShardsToo) {
  // ZeRO-1 with ep 2 over dp 4: each rank's experts (half of them) are sharded over the
  // two replicas that hold the same experts, and the "expert grads" reduce-scatter leaves
  // each with half of those gradients. After the optimizer step the updated halves must
  // be all-gathered over that expert-data-parallel group, as the dense weights are over
  // the data-parallel group: bf16 weights of expert / ep parameters.
  const Cluster c = gpus(1, 4);
  const auto [dense, expert] = dense_and_expert(workload(moe()));
  ParallelPlan plan;
  plan.ep = 2;
  plan.zero_stage = 1;
  const LoweredStep step = lower(c, moe(), plan, training(4));
  for (const CollectiveCall* call : calls(step.graph, "expert grads")) {
    EXPECT_EQ(call->op, CollectiveOp::kReduceScatter);
  }
  std::set<std::vector<int>> expert_gathers;
  for (const CollectiveCall& call : step.graph.collectives()) {
    if (call.op != CollectiveOp::kAllGather) continue;
    if (call.members == std::vector<int>{0, 2} || call.members == std::vector<int>{1, 3}) {
      expert_gathers.insert(call.members);
      EXPECT_NEAR(call.bytes.as_double(), 2.0 * static_cast<double>(expert / 2), 1) << call.label;
    }
  }
  EXPECT_EQ(expert_gathers, (std::set<std::vector<int>>{{0, 2}, {1, 3}}));
  run(c, step);
}

TEST(LoweringExpertParallel, Zero3GathersExpertsOverTheirOwnGroup) {
  // ZeRO-3 with ep 2 over dp 4: the dense weights are sharded over all four replicas, the
  // experts over the two that hold the same ones ({0, 2} and {1, 3}), as model_state_bytes
  // is told. So each pass gathers, layer by layer, the dense weights over four ranks and the rank's
  // expert / ep experts over its expert-data-parallel pair.
  const Cluster c = gpus(1, 4);
  const auto [dense, expert] = dense_and_expert(workload(moe()));
  ParallelPlan plan;
  plan.ep = 2;
  plan.zero_stage = 3;
  const LoweredStep step = lower(c, moe(), plan, training(4));
  std::set<std::vector<int>> expert_gathers;
  double dense_bytes = 0;
  double expert_bytes = 0;
  for (const CollectiveCall& call : step.graph.collectives()) {
    // One forward pass of micro-batch 0, as seen from rank 0's groups.
    if (call.op != CollectiveOp::kAllGather || call.label.find("fwd mb0 ") == std::string::npos) continue;
    if (call.members.size() == 4) {
      dense_bytes += call.bytes.as_double();
    } else {
      expert_gathers.insert(call.members);
      if (call.members.front() == 0) expert_bytes += call.bytes.as_double();
    }
  }
  const double layers = static_cast<double>(workload(moe()).layers.size());
  EXPECT_NEAR(dense_bytes, 2.0 * static_cast<double>(dense), layers);
  EXPECT_NEAR(expert_bytes, 2.0 * static_cast<double>(expert / 2), layers);
  EXPECT_EQ(expert_gathers, (std::set<std::vector<int>>{{0, 2}, {1, 3}}));
  run(c, step);
}

TEST(LoweringShardedClassifier, WorldCollectivesPerMicroBatch) {
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.shard_classifier = true;
  const LoweredStep step = lower(c, classifier(), plan, training(8));  // dp 4, m = 2
  ASSERT_EQ(step.micro_batches, 2);
  const std::vector<int> world = {0, 1, 2, 3};
  for (auto [label, op] : {std::pair{"classifier feature gather", CollectiveOp::kAllGather},
                           std::pair{"softmax reduce", CollectiveOp::kAllReduce},
                           std::pair{"classifier grad scatter", CollectiveOp::kReduceScatter}}) {
    const auto cs = calls(step.graph, label);
    EXPECT_EQ(cs.size(), 2u) << label;
    for (const CollectiveCall* call : cs) {
      EXPECT_EQ(call->op, op) << label;
      EXPECT_EQ(call->members, world) << label;
    }
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(count_tasks(step.graph, r, TaskKind::kCollective, label), 2);
  }
  // Backbone: 784 x 256 + 256 and 256 x 256 + 256 = 266,752 parameters, replicated and
  // data parallel; classifier: 256 x 100,000 + 100,000 = 25,700,000, a quarter per rank.
  const Workload w = workload(classifier());
  const int64_t backbone = params_of(w, 0, 2);
  ASSERT_EQ(backbone, 266752);
  ASSERT_EQ(w.params() - backbone, 25700000);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(step.roles[r].params, backbone + 25700000 / 4) << r;
  // Only the backbone's gradients are all-reduced.
  EXPECT_NEAR(total_bytes(calls(step.graph, "grad bucket")), 2.0 * backbone, 2);
  run(c, step);
}

// ---------------------------------------------------------------------------------------
// Pipelines.

// The chunk a pipeline task names ("send act mb3.c1" -> 1; no ".c" -> 0).
int chunk_of(std::string_view name) {
  const size_t at = name.find(".c");
  return at == std::string_view::npos ? 0 : std::stoi(std::string(name.substr(at + 2)));
}

class LoweringPipeline : public ::testing::TestWithParam<PipelineSchedule> {};

TEST_P(LoweringPipeline, EachBoundaryCarriesMForwardAndMBackwardMessages) {
  const PipelineSchedule schedule = GetParam();
  const int pp = 4, m = 8;
  const int v = schedule == PipelineSchedule::kInterleaved1F1B ? 2 : 1;
  const Cluster c = gpus(2, 4);
  ParallelPlan plan;
  plan.pp = pp;
  plan.schedule = schedule;
  plan.virtual_stages = v;
  const LoweredStep step = lower(c, gpt(), plan, training(2 * m));  // dp 2
  ASSERT_EQ(step.plan.dp, 2);
  ASSERT_EQ(step.micro_batches, m);
  // Messages by (replica, boundary between virtual stages k and k + 1, direction); the
  // peer must be the neighbouring virtual stage of the same replica.
  std::map<std::tuple<int, int, bool>, int> sends;
  int recvs = 0;
  for (const TaskView t : step.graph.tasks()) {
    if (t.kind == TaskKind::kRecv) ++recvs;
    if (t.kind != TaskKind::kSend) continue;
    const RankRole& from = step.roles[t.rank];
    const RankRole& to = step.roles[t.peer];
    EXPECT_EQ(from.dp, to.dp) << t.name;
    const int k = chunk_of(t.name) * pp + from.pp;
    const bool forward = starts_with(t.name, "send act");
    const int boundary = forward ? k : k - 1;
    EXPECT_EQ(to.pp, (forward ? k + 1 : k - 1) % pp) << t.name;
    ++sends[{from.dp, boundary, forward}];
  }
  EXPECT_EQ(static_cast<int>(sends.size()), 2 * (pp * v - 1) * 2);
  for (const auto& [key, n] : sends) {
    EXPECT_EQ(n, m) << "replica " << std::get<0>(key) << " boundary " << std::get<1>(key)
                    << (std::get<2>(key) ? " forward" : " backward");
  }
  EXPECT_EQ(recvs, 2 * (pp * v - 1) * 2 * m);
  // Each stage holds 8 / pp = 2 blocks over its chunks; the first stage also the
  // embedding, the last the head.
  for (int r = 0; r < 8; ++r) {
    const int stage = step.roles[r].pp;
    EXPECT_EQ(step.roles[r].layers, 2 + (stage == 0 || stage == pp - 1 ? 1 : 0)) << r;
  }
  run(c, step);
}

INSTANTIATE_TEST_SUITE_P(Schedules, LoweringPipeline, ::testing::ValuesIn(kAllSchedules),
                         [](const auto& p) { return std::string(schedule_name(p.param)); });

TEST(LoweringPipelineTied, FirstAndLastStageShareTheEmbeddingTable) {
  // Tied embeddings over two stages (Megatron-LM, Narayanan et al. 2021): the last stage
  // keeps its own copy of the vocab x hidden word-embedding table for the logits, and the
  // two copies' gradients are all-reduced between the first and last stage every step.
  // Here 1000 x 512 = 512,000 parameters, 1,024,000 bytes of bf16 gradients.
  const Cluster c = gpus(1, 2);
  ModelSpec tied = gpt();
  tied.tied_embeddings = true;
  ParallelPlan plan;
  plan.pp = 2;
  const LoweredStep step = lower(c, tied, plan, training(2));
  const Workload w = workload(tied);
  const int64_t table = 1000 * 512;
  EXPECT_EQ(step.roles[0].params, params_of(w, 0, 5));
  EXPECT_EQ(step.roles[1].params, params_of(w, 5, 10) + table);
  bool shared = false;
  for (const CollectiveCall& call : step.graph.collectives()) {
    if (call.op == CollectiveOp::kAllReduce && call.members == std::vector<int>{0, 1}) {
      shared = true;
      EXPECT_NEAR(call.bytes.as_double(), 2.0 * table, 1) << call.label;
    }
  }
  EXPECT_TRUE(shared) << "no embedding-gradient all-reduce between the first and last stage";
  run(c, step);
}

TEST(LoweringPipelineMemory, GpipeKeepsEveryMicroBatch1F1BOnlyTheWarmUp) {
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.pp = 4;
  const int m = 8;
  plan.schedule = PipelineSchedule::kGpipe;
  const LoweredStep gpipe = lower(c, gpt(), plan, training(m));
  plan.schedule = PipelineSchedule::k1F1B;
  const LoweredStep one_f_one_b = lower(c, gpt(), plan, training(m));
  const Ran ran = run(c, one_f_one_b);
  for (int r = 0; r < 4; ++r) {
    const int s = one_f_one_b.roles[r].pp;
    // GPipe holds all 8; 1F1B holds p - s (4, 3, 2, 1).
    const int in_flight = peak_in_flight_chunks(PipelineSchedule::k1F1B, s, 4, m);
    ASSERT_EQ(in_flight, 4 - s);
    EXPECT_NEAR(gpipe.roles[r].activation_bytes_peak / one_f_one_b.roles[r].activation_bytes_peak,
                static_cast<double>(m) / in_flight, 1e-9)
        << r;
    // The simulator sees the same peak: model states, NCCL's buffers (dp 1: no gradient
    // buckets) and the GEMM workspace, then the in-flight activations, each allocation
    // rounded to a whole byte.
    EXPECT_NEAR(ran.result.ranks[r].peak_memory.as_double(),
                one_f_one_b.roles[r].model_state_bytes + one_f_one_b.roles[r].workspace_bytes +
                    one_f_one_b.roles[r].activation_bytes_peak + one_f_one_b.roles[r].comm_buffer_bytes,
                2 + in_flight)
        << r;
  }
}

// Recomputation keeps less but rebuilds it in the backward pass: the peak is the kept
// activations plus the largest layer's rebuilt ones (a whole layer's beyond its input under
// full recomputation, the attention core under selective), on top of the model states and
// the GEMM workspace (the H100's 32 MiB).
TEST(LoweringMemory, RecomputationRebuildsOneLayerAtATime) {
  const Cluster c = gpus(1, 1);
  const Workload w = workload(gpt());
  for (Recompute mode : {Recompute::kFull, Recompute::kSelective}) {
    SCOPED_TRACE(recompute_name(mode));
    TrainingSetup t = training(1);
    t.recompute = mode;
    const LoweredStep step = lower(c, gpt(), ParallelPlan{}, t);
    double kept = 0, rebuilt = 0;
    for (size_t i = 0; i < w.layers.size(); ++i) {
      const double input = i > 0 ? w.layers[i - 1].output_bytes : 0;
      const double layer_kept = layer_activation_bytes(w.layers[i], input, mode, {});
      kept += layer_kept;
      rebuilt = std::max(rebuilt, layer_activation_bytes(w.layers[i], input, Recompute::kNone, {}) -
                                      layer_kept);
    }
    ASSERT_GT(rebuilt, 0);
    EXPECT_NEAR(step.roles[0].activation_bytes_peak, kept + rebuilt, 2);
    EXPECT_EQ(step.roles[0].workspace_bytes, MiB(32).as_double());
    const Ran ran = run(c, step);
    EXPECT_NEAR(ran.result.ranks[0].peak_memory.as_double(),
                step.roles[0].model_state_bytes + step.roles[0].workspace_bytes +
                    step.roles[0].activation_bytes_peak + step.roles[0].comm_buffer_bytes,
                4);
  }
}

// Activation offload (training.offload_layers 1) on 4 stages of 2 blocks, 8 micro-batches,
// 1F1B: each forward copies its stage's first block's activations to the host, worked by
// hand as Korthikanti's s b h (34 + 5 a s / h) = 128 x 512 x (34 + 10) = 2,883,584 bytes
// (bf16, no tensor parallelism), while the second block runs; each backward fetches them
// back while the second block's backward runs, and the first block's waits for them. A
// stage holding n micro-batches keeps n - 1 of them without that block on the device.
Cluster gpus_with_host(double host_gb_per_s) {
  ClusterSpec spec = one_region(node_group(1, 4, "H100"), fabric(FabricKind::kNone));
  spec.regions[0].node_groups[0].host_bandwidth = Bandwidth::gb_per_s(host_gb_per_s);
  spec.regions[0].node_groups[0].pcie_bandwidth = Bandwidth::gb_per_s(host_gb_per_s);
  return build_cluster(spec);
}

TEST(LoweringMemory, ActivationOffloadKeepsTheFirstBlocksOnTheHost) {
  ParallelPlan plan;
  plan.pp = 4;
  const int m = 8;
  const double block = 128.0 * 512 * (34 + 5.0 * 8 * 128 / 512);
  ASSERT_DOUBLE_EQ(block, 2883584);
  ASSERT_DOUBLE_EQ(korthikanti_layer_activation_bytes(128, 1, 512, 8, 1, false, Recompute::kNone),
                   block);
  TrainingSetup t = training(m);
  const Cluster fast = gpus_with_host(1e6);  // copies far faster than the kernels
  const LoweredStep base = lower(fast, gpt(), plan, t);
  t.offload_layers = 1;
  const LoweredStep step = lower(fast, gpt(), plan, t);
  const TaskGraph& g = step.graph;
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE(r);
    int out = 0, in = 0;
    for (const TaskView v : g.tasks()) {
      if (v.rank != r || v.kind != TaskKind::kMemcpy) continue;
      EXPECT_DOUBLE_EQ(v.bytes.as_double(), block);
      out += v.memcpy_kind == MemcpyKind::kDeviceToHost && starts_with(v.name, "offload act");
      in += v.memcpy_kind == MemcpyKind::kHostToDevice && starts_with(v.name, "reload act");
    }
    EXPECT_EQ(out, m);
    EXPECT_EQ(in, m);
    const int in_flight = peak_in_flight_chunks(PipelineSchedule::k1F1B, r, 4, m);
    EXPECT_NEAR(base.roles[r].activation_bytes_peak - step.roles[r].activation_bytes_peak,
                (in_flight - 1) * block, 2);
  }
  // The offloaded block's backward waits for its copy; the block after it does not.
  for (const TaskView v : g.tasks()) {
    if (v.rank != 0 || v.kind != TaskKind::kCompute || !starts_with(v.name, "bwd mb3 part "))
      continue;
    bool waits = false;
    for (TaskId d : v.deps) waits |= starts_with(g.task(d).name, "reload act mb3");
    EXPECT_EQ(waits, v.name == "bwd mb3 part 1") << v.name;
  }
  // Simulated, the copies hide behind the kernels: the same step, the peaks as lowered.
  const Ran ran_base = run(fast, base);
  const Ran ran = run(fast, step);
  EXPECT_NEAR(ran.result.end.seconds(), ran_base.result.end.seconds(),
              1e-3 * ran_base.result.end.seconds());
  for (int r = 0; r < 4; ++r) {
    EXPECT_NEAR(ran.result.ranks[r].peak_memory.as_double(),
                step.roles[r].model_state_bytes + step.roles[r].workspace_bytes +
                    step.roles[r].activation_bytes_peak + step.roles[r].comm_buffer_bytes,
                8)
        << r;
  }
  // Over a slow host link the reload does not arrive in time, and the step waits for it.
  const Cluster slow = gpus_with_host(1);
  EXPECT_GT(run(slow, lower(slow, gpt(), plan, t)).result.end.seconds(),
            1.5 * run(slow, lower(slow, gpt(), plan, training(m))).result.end.seconds());
  // More blocks than the model has, or with ZeRO-3, is refused naming the key.
  t.offload_layers = 3;
  EXPECT_THAT([&] { lower(fast, gpt(), plan, t); },
              ::testing::ThrowsMessage<PlanError>(HasSubstr(
                  "/training/offload_layers: must be between 0 and the 2 blocks of the largest "
                  "pipeline chunk")));
  t.offload_layers = 1;
  plan.zero_stage = 3;
  EXPECT_THAT([&] { lower(fast, gpt(), plan, t); },
              ::testing::ThrowsMessage<PlanError>(HasSubstr("ZeRO stages 0 to 2")));
}

// The same offload where gradient buckets cut the backward pass, and at layer granularity:
// the first segment below the offloaded blocks' end waits for the reload, and the step runs.
TEST(LoweringMemory, ActivationOffloadWithBucketsAndLayers) {
  const Cluster c = gpus_with_host(1e6);
  ParallelPlan plan;
  plan.pp = 2;  // dp 2: bucketed gradients overlap the backward pass
  TrainingSetup t = training(8);
  t.offload_layers = 2;
  for (Granularity granularity : {Granularity::kChunk, Granularity::kLayer}) {
    SCOPED_TRACE(granularity_name(granularity));
    LoweringInput in;
    in.cluster = &c;
    in.model = gpt();
    in.training = t;
    in.plan = plan;
    in.costs = &costs();
    in.granularity = granularity;
    const LoweredStep step = lower_training_step(in);
    const TaskGraph& g = step.graph;
    int waiting = 0;
    for (const TaskView v : g.tasks()) {
      if (v.rank != 0 || v.kind != TaskKind::kCompute) continue;
      for (TaskId d : v.deps) waiting += starts_with(g.task(d).name, "reload act");
    }
    EXPECT_EQ(waiting, 4) << "one backward task per micro-batch waits for its reload";
    run(c, step);
    // The split at the offloaded blocks cuts a segment, not a gradient bucket.
    in.training.offload_layers = 0;
    const LoweredStep plain = lower_training_step(in);
    EXPECT_EQ(calls(g, "grad bucket").size(), calls(plain.graph, "grad bucket").size());
  }
}

// A chunk whose blocks are all offloaded: the backward waits for the whole reload, and a
// slow host link slows the forward passes too (each waits for the copy before it), while
// the device keeps the peak as lowered.
TEST(LoweringMemory, ActivationOffloadOfAWholeChunk) {
  ParallelPlan plan;
  plan.pp = 4;
  TrainingSetup t = training(8);
  t.offload_layers = 2;  // every block of a stage's chunk
  for (double host : {1e6, 1.0}) {
    const Cluster c = gpus_with_host(host);
    const LoweredStep step = lower(c, gpt(), plan, t);
    const TaskGraph& g = step.graph;
    for (const TaskView v : g.tasks()) {
      if (v.rank != 1 || v.kind != TaskKind::kCompute || !starts_with(v.name, "bwd mb0")) continue;
      bool waits = false;
      for (TaskId d : v.deps) waits |= starts_with(g.task(d).name, "reload act mb0");
      EXPECT_TRUE(waits) << v.name;
    }
    const Ran ran = run(c, step);
    for (int r = 0; r < 4; ++r) {
      EXPECT_NEAR(ran.result.ranks[r].peak_memory.as_double(),
                  step.roles[r].model_state_bytes + step.roles[r].workspace_bytes +
                      step.roles[r].activation_bytes_peak + step.roles[r].comm_buffer_bytes,
                  8)
          << "host " << host << " rank " << r;
    }
  }
}

TEST(LoweringPipelineBubble, OneF1BMatchesTheIdealBubbleAndInterleavingShrinksIt) {
  // pp 4, m 8, compute-bound stages of two blocks each: 1F1B runs m + p - 1 slots of one
  // micro-batch's forward + backward, a bubble of (p - 1) / m = 0.375 of the ideal time.
  // A pipeline send (8 MiB over NVLink, ~20 us) is about 0.5% of a 3.5 ms slot; fill and
  // drain cross 2 (p - 1) = 6 boundaries, so communication adds ~0.004 to the bubble, and
  // the embedding and the 1000-word head make the end stages slightly longer than the
  // middle ones (the slot is the longest). 0.03 covers both with room.
  const Cluster c = gpus(1, 4);
  const int pp = 4, m = 8;
  ParallelPlan plan;
  plan.pp = pp;
  plan.schedule = PipelineSchedule::k1F1B;
  const TrainingSetup t = training(2 * m, 2);
  const LoweredStep step = lower(c, compute_heavy_gpt(), plan, t);
  ASSERT_EQ(step.micro_batches, m);
  const Ran ran = run(c, step);
  // One micro-batch's forward + backward on the busiest stage.
  double slot = 0;
  for (int r = 0; r < pp; ++r) {
    slot = std::max(
        slot,
        (compute_time(step.graph, r, "fwd") + compute_time(step.graph, r, "bwd")).seconds() / m);
  }
  const double pipeline = ran.last_pass_end.seconds();
  const double bubble = pipeline / (m * slot) - 1;
  EXPECT_NEAR(bubble, ideal_bubble_fraction(PipelineSchedule::k1F1B, pp, m), 0.03);
  EXPECT_NEAR(bubble, 0.375, 0.03);
  // Every stage waits on its neighbours at some point: the first for gradients, the
  // others for activations.
  for (int r = 0; r < pp; ++r) EXPECT_GT(ran.result.ranks[r].waiting_p2p, Duration::zero()) << r;

  // Two virtual stages per rank: the ideal bubble halves to 0.1875. Twice the boundaries
  // double the send cost (~0.01), still well inside 0.03; ask for at least 0.1 of the
  // 0.19 saving in time.
  plan.schedule = PipelineSchedule::kInterleaved1F1B;
  plan.virtual_stages = 2;
  const LoweredStep interleaved = lower(c, compute_heavy_gpt(), plan, t);
  const Ran ran_i = run(c, interleaved);
  EXPECT_LT(ran_i.last_pass_end.seconds(), pipeline - 0.1 * m * slot);
  EXPECT_LT(ran_i.result.end, ran.result.end);
  const double bubble_i = ran_i.last_pass_end.seconds() / (m * slot) - 1;
  EXPECT_NEAR(bubble_i, ideal_bubble_fraction(PipelineSchedule::kInterleaved1F1B, pp, m, 2), 0.03);
}

// ---------------------------------------------------------------------------------------
// Memory.

TEST(LoweringMemory, ModelStatesOverCapacityAreReportedPerRank) {
  // 256 MiB devices. Stage 0 holds the embedding and 7 blocks: (577,536 + 7 x 3,152,384)
  // x 16 bytes of mixed-precision Adam state = 362 MB, over 268 MB; stage 1 holds one
  // block and the head, about 59 MB.
  Cluster c = gpus(1, 2);
  auto small = std::make_unique<DeviceSpec>(*c.devices[0].spec);
  small->name = "H100-256MiB";
  small->memory_capacity = MiB(256);
  // NCCL's buffers as on PCIe (2 p2p channels, 24 MiB for the pipeline peer), not the
  // H100's 32 (384 MiB, more than the device).
  small->efficiency.nccl_channels = 2;
  small->efficiency.nccl_p2p_channels = 2;
  for (ClusterDevice& d : c.devices) d.spec = small.get();
  c.owned_specs.push_back(std::move(small));

  ParallelPlan plan;
  plan.pp = 2;
  plan.stage_layers = {7, 1};
  const LoweredStep step = lower(c, gpt(), plan, training(2));
  const Workload w = workload(gpt());
  EXPECT_EQ(step.roles[0].layers, 8);  // embedding + 7 blocks
  EXPECT_EQ(step.roles[0].first_layer, 0);
  EXPECT_EQ(step.roles[1].first_layer, 8);
  EXPECT_EQ(step.roles[0].params, params_of(w, 0, 8));
  EXPECT_EQ(step.roles[1].params, params_of(w, 8, 10));
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(
        step.roles[r].model_state_bytes,
        model_state_bytes(step.roles[r].params, Precision::kBf16, Optimizer::kAdam, 0, 1).total(),
        1)
        << r;
  }
  ASSERT_GT(step.roles[0].model_state_bytes, MiB(256).as_double());
  ASSERT_LT(step.roles[1].model_state_bytes + step.roles[1].activation_bytes_peak +
                step.roles[1].comm_buffer_bytes,
            MiB(256).as_double());

  const Ran ran = run(c, step);
  EXPECT_TRUE(ran.result.ranks[0].out_of_memory);
  EXPECT_FALSE(ran.result.ranks[1].out_of_memory);
  ASSERT_EQ(ran.result.memory_overflows.size(), 1u);
  const MemoryOverflowRecord& o = ran.result.memory_overflows[0];
  EXPECT_EQ(o.rank, 0);
  EXPECT_EQ(step.graph.task(o.task).rank, 0);
  // Weights, gradients, then optimizer states: the third allocation overflows.
  EXPECT_EQ(step.graph.task(o.task).name, "optimizer states");
  EXPECT_EQ(step.graph.task(o.task).memory, MemoryCategory::kOptimizerStates);
  EXPECT_EQ(o.capacity, MiB(256));
  EXPECT_GT(o.in_use, MiB(256));
}

// Settings that change nothing under the plan are noted, and only then.
TEST(LoweringPlan, NoOpSettingsAreNoted) {
  const Cluster c = gpus(1, 2);
  ParallelPlan plan;
  plan.sequence_parallel = true;
  plan.virtual_stages = 2;
  plan.schedule = PipelineSchedule::kInterleaved1F1B;
  const LoweredStep step = lower(c, gpt(), plan, training(8, 2));
  EXPECT_THAT(step.notes, Contains(HasSubstr("sequence_parallel has no effect at tp 1")));
  EXPECT_THAT(step.notes, Contains(HasSubstr("virtual_stages 2 at pp 1")));
  ModelSpec windowed = gpt();
  windowed.sliding_window = 64;
  TrainingSetup t = training(8, 2);
  EXPECT_THAT(lower(c, windowed, ParallelPlan{}, t).notes,
              Contains(HasSubstr("without flash_attention every score is computed")));
  t.flash_attention = true;
  EXPECT_THAT(lower(c, windowed, ParallelPlan{}, t).notes,
              Not(Contains(HasSubstr("sliding_window"))));
  plan.tp = 2;
  plan.pp = 1;
  plan.virtual_stages = 1;
  EXPECT_THAT(lower(c, gpt(), plan, training(8, 2)).notes, Not(Contains(HasSubstr("no effect"))));
}

// ---------------------------------------------------------------------------------------
// Mixed devices.

// A precision a device has no math for runs on math that carries it, and the plan says so:
// fp8 on the H100 runs as asked, on the A100 at its fp16 rate.
TEST(LoweringHeterogeneous, APrecisionWithoutItsMathIsNoted) {
  const Cluster c = h100_and_a100();
  ParallelPlan plan;
  plan.pp = 2;
  TrainingSetup t = training(8, 2);
  t.precision = Precision::kFp8;
  const LoweredStep step = lower(c, compute_heavy_gpt(), plan, t);
  EXPECT_THAT(step.notes, Contains(HasSubstr("A100-80GB: fp8 GEMMs run at its fp16 rate")));
  EXPECT_THAT(step.notes, Not(Contains(HasSubstr("H100"))));
  t.precision = Precision::kBf16;
  EXPECT_THAT(lower(c, compute_heavy_gpt(), plan, t).notes,
              Not(Contains(HasSubstr("GEMMs run at"))));
}

TEST(LoweringHeterogeneous, BalancedStagesGiveTheFastDeviceMoreLayers) {
  const Cluster c = h100_and_a100();
  ParallelPlan plan;
  plan.pp = 2;
  const TrainingSetup t = training(8, 2);  // m = 4
  const LoweredStep even = lower(c, compute_heavy_gpt(), plan, t);
  plan.balance_stages = true;
  const LoweredStep balanced = lower(c, compute_heavy_gpt(), plan, t);
  EXPECT_EQ(even.roles[0].layers, 5);  // embedding + 4 blocks
  EXPECT_EQ(even.roles[1].layers, 5);  // 4 blocks + head
  // A block runs about 2.1x faster on the H100 (989 vs 312 TFLOPS bf16 peak, but 3.35 vs
  // 2.04 TB/s of HBM for the memory-bound ops): 8 blocks split 2.1 : 1 with at least
  // one each is 1 + 4.06 and 1 + 1.94, rounded by largest remainder to 5 and 3.
  EXPECT_GT(balanced.roles[0].layers, balanced.roles[1].layers);
  EXPECT_GE(balanced.roles[0].layers - 1, 5);
  EXPECT_THAT(balanced.notes, Contains(HasSubstr("balanced")));
  const Ran ran_even = run(c, even);
  const Ran ran_balanced = run(c, balanced);
  // The even split waits on the A100's four blocks, the balanced one on its three: the
  // steady state shrinks by a quarter; fill, drain and the optimizer step dilute that
  // (about 0.82 measured), so ask for at least 10% off.
  EXPECT_LT(ran_balanced.result.end.seconds(), 0.9 * ran_even.result.end.seconds());
}

// Units of one model differ too: balancing sees each unit's own speed.
TEST(LoweringHeterogeneous, BalancedStagesSeeTheSlowUnit) {
  Cluster c = gpus(1, 2);
  c.devices[1].speed = 0.5;  // the second H100 runs at half speed
  ParallelPlan plan;
  plan.pp = 2;
  plan.balance_stages = true;
  const LoweredStep balanced = lower(c, compute_heavy_gpt(), plan, training(8, 2));
  EXPECT_GT(balanced.roles[0].layers, balanced.roles[1].layers);
  c.devices[1].speed = 1;
  const LoweredStep same = lower(c, compute_heavy_gpt(), plan, training(8, 2));
  EXPECT_EQ(same.roles[0].layers, same.roles[1].layers);
}

// Balancing prices a stage as it runs: its shard of each block and its tensor-parallel
// collectives. Two nodes of the same GPU, one on NVSwitch and one on PCIe, with TP 2
// inside each: the PCIe stage's all-reduces are slower, so it gets fewer blocks, and the
// step is faster than with the even split.
TEST(LoweringHeterogeneous, BalancedStagesCountTensorParallelCollectives) {
  ClusterSpec spec = one_region(node_group(1, 2, "A100-80GB"), fabric(FabricKind::kSingleSwitch));
  NodeGroupSpec pcie = node_group(1, 2, "A100-80GB");
  pcie.intra = IntraNodeKind::kPcie;
  spec.regions[0].node_groups.push_back(pcie);
  const Cluster c = build_cluster(spec);
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 2;
  const ModelSpec model = gpt(16, 2048, 16, 1024);
  const TrainingSetup t = training(16, 4);
  const LoweredStep even = lower(c, model, plan, t);
  plan.balance_stages = true;
  const LoweredStep balanced = lower(c, model, plan, t);
  ASSERT_EQ(even.roles[0].pp, 0);
  ASSERT_EQ(c.devices[2].node, 1);
  EXPECT_EQ(even.roles[0].layers, even.roles[2].layers);  // 1 + 8 and 8 + 1
  EXPECT_GT(balanced.roles[0].layers, balanced.roles[2].layers);
  EXPECT_LT(run(c, balanced).result.end, run(c, even).result.end);
}

// An A100 node on NVSwitch and a V100 node on an NVLink mesh, 8 GPUs each.
Cluster a100_node_and_v100_node() {
  ClusterSpec spec = one_region(node_group(1, 8, "A100-80GB"), fabric(FabricKind::kSingleSwitch));
  NodeGroupSpec v100 = node_group(1, 8, "V100");
  v100.intra = IntraNodeKind::kNvLinkMesh;
  spec.regions[0].node_groups.push_back(v100);
  return build_cluster(spec);
}

// Stages are split so that the slowest finishes first, the embedding and the head
// counted: an A100 node then a V100 node, TP 8 inside each, and a vocabulary of 50,257
// whose head costs the V100 stage about as much as two blocks. Proportional to block
// speed alone, the V100 stage would take 3 of 12 blocks and the head; the balanced split
// is as fast as the best of all splits, found here by trying each.
TEST(LoweringHeterogeneous, BalancedStagesMatchTheBestSplit) {
  const Cluster c = a100_node_and_v100_node();
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = 2;
  ModelSpec model = gpt(12, 2048, 16, 1024);
  model.vocab = 50257;
  TrainingSetup t = training(16, 2);
  t.precision = Precision::kFp16;
  plan.balance_stages = true;
  const LoweredStep balanced = lower(c, model, plan, t);
  const double balanced_s = run(c, balanced).result.end.seconds();
  plan.balance_stages = false;
  double best_s = 1e300;
  for (int a = 1; a < 12; ++a) {
    plan.stage_layers = {a, 12 - a};
    best_s = std::min(best_s, run(c, lower(c, model, plan, t)).result.end.seconds());
  }
  EXPECT_GT(balanced.roles[0].layers, balanced.roles[8].layers);
  EXPECT_LE(balanced_s, 1.01 * best_s);
}

// With interleaving, the head is on the last virtual stage (stage 1's second chunk), and
// the balanced split is as fast as the best of all 165 splits of 12 blocks over 4
// virtual stages.
TEST(LoweringHeterogeneous, BalancedInterleavedStagesMatchTheBestSplit) {
  const Cluster c = a100_node_and_v100_node();
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = 2;
  plan.virtual_stages = 2;
  plan.schedule = PipelineSchedule::kInterleaved1F1B;
  ModelSpec model = gpt(12, 2048, 16, 1024);
  model.vocab = 50257;
  TrainingSetup t = training(16, 2);
  t.precision = Precision::kFp16;
  plan.balance_stages = true;
  const double balanced_s = run(c, lower(c, model, plan, t)).result.end.seconds();
  plan.balance_stages = false;
  double best_s = 1e300;
  for (int a = 1; a < 12; ++a) {
    for (int b = 1; a + b < 12; ++b) {
      for (int d = 1; a + b + d < 12; ++d) {
        plan.stage_layers = {a, b, d, 12 - a - b - d};
        best_s = std::min(best_s, run(c, lower(c, model, plan, t)).result.end.seconds());
      }
    }
  }
  EXPECT_LE(balanced_s, 1.01 * best_s);
}

// Replica micro-batches are split so that the slowest replica finishes first, with the
// collectives' latency, which does not shrink with the micro-batch, counted: on an A100
// and a V100 node with TP 8 inside each, the balanced split is as fast as the best of all
// splits, found here by trying each.
TEST(LoweringHeterogeneous, BalancedReplicasMatchTheBestSplit) {
  const Cluster c = a100_node_and_v100_node();
  ParallelPlan plan;
  plan.tp = 8;
  const ModelSpec model = gpt(4, 2048, 16, 1024);
  TrainingSetup t = training(8, 4);
  t.precision = Precision::kFp16;
  plan.balance_replicas = true;
  const LoweredStep balanced = lower(c, model, plan, t);
  const double balanced_s = run(c, balanced).result.end.seconds();
  plan.balance_replicas = false;
  double best_s = 1e300;
  for (int64_t a = 1; a < 8; ++a) {
    plan.replica_micro_batch = {a, 8 - a};
    best_s = std::min(best_s, run(c, lower(c, model, plan, t)).result.end.seconds());
  }
  EXPECT_GT(balanced.plan.replica_micro_batch[0], balanced.plan.replica_micro_batch[1]);
  EXPECT_LE(balanced_s, 1.01 * best_s);
}

TEST(LoweringHeterogeneous, BalancedReplicasGiveTheFastDeviceABiggerMicroBatch) {
  const Cluster c = h100_and_a100();
  ParallelPlan plan;
  const ModelSpec model = gpt(8, 1024, 16, 1024);
  const TrainingSetup t = training(8, 4);  // two replicas of 4: one round
  const LoweredStep even = lower(c, model, plan, t);
  plan.balance_replicas = true;
  const LoweredStep balanced = lower(c, model, plan, t);
  EXPECT_EQ(even.roles[0].micro_batch, 4);
  EXPECT_EQ(even.roles[1].micro_batch, 4);
  EXPECT_GT(balanced.roles[0].micro_batch, balanced.roles[1].micro_batch);
  EXPECT_EQ(balanced.roles[0].micro_batch + balanced.roles[1].micro_batch, 8);
  EXPECT_EQ(balanced.plan.replica_micro_batch,
            (std::vector<int64_t>{balanced.roles[0].micro_batch, balanced.roles[1].micro_batch}));
  EXPECT_EQ(balanced.samples_per_iteration, 8);
  EXPECT_EQ(balanced.micro_batches, 1);
  EXPECT_THAT(balanced.notes, Contains(HasSubstr("balanced")));
  const Ran ran_even = run(c, even);
  const Ran ran_balanced = run(c, balanced);
  EXPECT_LT(ran_balanced.result.end, ran_even.result.end);
}

TEST(LoweringHeterogeneous, ExplicitReplicaMicroBatches) {
  const Cluster c = gpus(1, 2);
  ParallelPlan plan;
  plan.replica_micro_batch = {3, 1};
  const LoweredStep step = lower(c, gpt(), plan, training(8));  // rounds of 4: m = 2
  EXPECT_EQ(step.micro_batches, 2);
  EXPECT_EQ(step.roles[0].micro_batch, 3);
  EXPECT_EQ(step.roles[1].micro_batch, 1);
  EXPECT_EQ(step.samples_per_iteration, 8);
  run(c, step);
}

TEST(LoweringHeterogeneous, UnevenTensorShares) {
  const Cluster c = gpus(1, 2);
  ParallelPlan plan;
  plan.tp = 2;
  plan.tp_shares = {0.75, 0.25};
  const LoweredStep step = lower(c, gpt(), plan, training(1));
  // Replicated parameters R, split ones S: rank 0 holds R + 0.75 S, rank 1 R + 0.25 S.
  const Workload w = workload(gpt());
  plan.tp_shares = {};
  const LoweredStep even = lower(c, gpt(), plan, training(1));
  const double half = static_cast<double>(even.roles[0].params);
  const double replicated = 2 * half - static_cast<double>(w.params());
  const double split = static_cast<double>(w.params()) - replicated;
  EXPECT_NEAR(static_cast<double>(step.roles[0].params), replicated + 0.75 * split, 2);
  EXPECT_NEAR(static_cast<double>(step.roles[1].params), replicated + 0.25 * split, 2);
  EXPECT_GT(compute_time(step.graph, 0, "fwd"), compute_time(step.graph, 1, "fwd"));
  run(c, step);
}

// ---------------------------------------------------------------------------------------
// Local SGD across regions.

Cluster two_region_cluster() {
  return build_cluster(
      two_regions({"east", "west"}, node_group(1, 2), Bandwidth::gbps(100), Duration::ms(10)));
}

bool spans_regions(const Cluster& c, const std::vector<int>& members) {
  for (int r : members) {
    if (c.devices[r].region != c.devices[members.front()].region) return true;
  }
  return false;
}

TEST(LoweringLocalSgd, LocalStepsStayInsideRegionsSyncStepsCross) {
  const Cluster c = two_region_cluster();
  ASSERT_EQ(c.num_ranks(), 4);
  ASSERT_NE(c.devices[0].region, c.devices[3].region);
  ParallelPlan plan;
  plan.sync_every = 4;
  const LoweredStep local = lower(c, gpt(), plan, training(4), /*global_sync=*/false);
  ASSERT_FALSE(calls(local.graph, "grad bucket").empty());
  for (const CollectiveCall& call : local.graph.collectives()) {
    EXPECT_FALSE(spans_regions(c, call.members)) << call.label;
  }
  EXPECT_TRUE(calls(local.graph, "cross-region average").empty());

  const LoweredStep sync = lower(c, gpt(), plan, training(4), /*global_sync=*/true);
  const auto average = calls(sync.graph, "cross-region average");
  ASSERT_EQ(average.size(), 1u);
  EXPECT_TRUE(spans_regions(c, average[0]->members));
  EXPECT_EQ(average[0]->algorithm, CollectiveAlgorithm::kCrossRegion);
  // Gradients are still reduced inside each region first.
  for (const CollectiveCall* call : calls(sync.graph, "grad bucket")) {
    EXPECT_FALSE(spans_regions(c, call->members));
  }
  // The sync step pays for the WAN (10 ms each way at least).
  const Ran ran_local = run(c, local);
  const Ran ran_sync = run(c, sync);
  EXPECT_GT(ran_sync.result.end - ran_local.result.end, Duration::ms(10));
}

TEST(LoweringLocalSgd, SynchronousDataParallelCrossesEveryStep) {
  const Cluster c = two_region_cluster();
  const LoweredStep step = lower(c, gpt(), ParallelPlan{}, training(4));
  const auto grad = calls(step.graph, "grad bucket");
  ASSERT_FALSE(grad.empty());
  for (const CollectiveCall* call : grad) {
    EXPECT_TRUE(spans_regions(c, call->members));
    EXPECT_EQ(call->algorithm, CollectiveAlgorithm::kCrossRegion);
  }
  EXPECT_TRUE(calls(step.graph, "cross-region average").empty());
  run(c, step);
}

// ---------------------------------------------------------------------------------------
// Plan errors: every message names the scenario key it concerns.

std::vector<std::string> plan_errors(const Cluster& c, const ModelSpec& model,
                                     const ParallelPlan& plan, const TrainingSetup& t) {
  try {
    lower(c, model, plan, t);
  } catch (const PlanError& e) {
    EXPECT_FALSE(e.messages().empty());
    for (const std::string& m : e.messages()) EXPECT_THAT(std::string(e.what()), HasSubstr(m));
    return e.messages();
  }
  ADD_FAILURE() << "no PlanError";
  return {};
}

std::string only_error(const Cluster& c, const ModelSpec& model, const ParallelPlan& plan,
                       const TrainingSetup& t) {
  const std::vector<std::string> errors = plan_errors(c, model, plan, t);
  EXPECT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
  return errors.empty() ? "" : errors.front();
}

TEST(LoweringPlanErrors, ModelParallelMustDivideTheRanks) {
  // lowering.h's own example: "parallelism: tp 8 x pp 16 x cp 1 = 128 does not divide the
  // cluster's 1000 ranks": the product is at fault, not one of its keys, so the loader
  // points at /parallelism.
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.tp = 1;
  plan.pp = 3;
  const std::string e = only_error(c, gpt(), plan, training(4));
  EXPECT_THAT(e, HasSubstr("does not divide"));
  EXPECT_THAT(e, HasSubstr("4 ranks"));
  EXPECT_THAT(e, ::testing::StartsWith("/parallelism: tp 1 x pp 3 x cp 1 = 3"));
}

TEST(LoweringPlanErrors, NameTheirKeys) {
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;

  plan.dp = 3;
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/dp: "), HasSubstr("the cluster has 4")));
  plan = {};
  plan.ep = 2;
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/ep: "), HasSubstr("mixture-of-experts")));
  plan = {};
  plan.tp = 4;
  plan.virtual_stages = 2;
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/virtual_stages: "), HasSubstr("interleaved_1f1b")));
  plan = {};
  plan.tp = 4;
  plan.tp_comm_overlap = true;
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/tp_comm_overlap: "), HasSubstr("sequence_parallel")));
  plan = {};
  EXPECT_THAT(only_error(c, gpt(), plan, training(6)),
              AllOf(StartsWith("/training/global_batch: "), HasSubstr("not a multiple")));
  // Interleaved: pp 2, dp 2, global batch 6 = 3 micro-batches per replica, not a multiple
  // of pp.
  plan.pp = 2;
  plan.schedule = PipelineSchedule::kInterleaved1F1B;
  plan.virtual_stages = 2;
  EXPECT_THAT(only_error(c, gpt(), plan, training(6)),
              AllOf(StartsWith("/training/global_batch: "), HasSubstr("multiple of pp (2)")));
  plan = {};
  plan.pp = 2;
  plan.stage_layers = {3, 3};
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/stage_layers: "), HasSubstr("sums to 6")));
  plan.stage_layers = {8};
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)), StartsWith("/parallelism/stage_layers: "));
  plan = {};
  plan.tp = 2;
  plan.shard_classifier = true;
  EXPECT_THAT(only_error(c, classifier(), plan, training(4)),
              AllOf(StartsWith("/parallelism/shard_classifier: "), HasSubstr("tp")));
  plan = {};
  plan.shard_classifier = true;
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/shard_classifier: "), HasSubstr("classifier model")));
  plan = {};
  plan.tp = 2;
  plan.tp_shares = {0.7, 0.4};
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/tp_shares: "), HasSubstr("sum to 1")));
  plan.tp_shares = {1.0};
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/tp_shares: "), HasSubstr("expected tp (2)")));
  plan = {};
  plan.rank_map = {0, 1, 1, 2};
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/rank_map: "), HasSubstr("repeated")));
  plan = {};
  plan.replica_micro_batch = {1, 1};
  EXPECT_THAT(
      only_error(c, gpt(), plan, training(4)),
      AllOf(StartsWith("/parallelism/replica_micro_batch: "), HasSubstr("expected one per")));
  plan = {};
  plan.replica_micro_batch = {1, 1, 1, 2};
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/training/global_batch: "),
                    HasSubstr("the sum of parallelism.replica_micro_batch")));
  plan = {};
  plan.bucket = Bytes(0);
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/bucket: "), HasSubstr("more than 0 bytes")));
  // Local SGD averages across regions; this cluster has one.
  plan = {};
  plan.sync_every = 4;
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)),
              AllOf(StartsWith("/parallelism/sync_every: "), HasSubstr("more than one region")));
  TrainingSetup zero_micro = training(4);
  zero_micro.micro_batch = 0;
  EXPECT_THAT(only_error(c, gpt(), ParallelPlan{}, zero_micro),
              StartsWith("/training/micro_batch: "));
}

TEST(LoweringPlanErrors, ExpertParallelMustDivideDpAndExperts) {
  // dp 4 and 4 experts: ep 3 divides neither; both are reported at once.
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.ep = 3;
  const std::vector<std::string> errors = plan_errors(c, moe(), plan, training(4));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_THAT(errors[0], AllOf(StartsWith("/parallelism/ep: "), HasSubstr("must divide dp (4)")));
  EXPECT_THAT(errors[1], AllOf(StartsWith("/parallelism/ep: "), HasSubstr("4 experts")));
}

TEST(LoweringPlanErrors, ExpertTensorParallelism) {
  const Cluster c = gpus(1, 8);
  ParallelPlan plan;
  plan.tp = 2;
  plan.sequence_parallel = true;
  plan.ep = 4;
  plan.etp = 4;  // 4 x 4 does not divide the stage's 8 ranks
  EXPECT_THAT(only_error(c, moe(), plan, training(8)),
              AllOf(StartsWith("/parallelism/etp: "), HasSubstr("must divide a pipeline stage's")));
  plan.ep = 1;
  plan.etp = 1;
  EXPECT_THAT(only_error(c, gpt(), plan, training(8)),
              AllOf(StartsWith("/parallelism/etp: "), HasSubstr("mixture-of-experts")));
  plan.etp = 0;
  plan.sequence_parallel = false;
  EXPECT_THAT(only_error(c, moe(), plan, training(8)),
              AllOf(StartsWith("/parallelism/sequence_parallel: "), HasSubstr("tp 2")));
  plan.sequence_parallel = true;
  plan.etp = 1;
  plan.tp_shares = {0.25, 0.75};
  EXPECT_THAT(only_error(c, moe(), plan, training(8)),
              AllOf(StartsWith("/parallelism/etp: "), HasSubstr("tp_shares")));
}

TEST(LoweringPlanErrors, SeveralProblemsAreListedTogether) {
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.dp = 2;
  plan.ep = 2;
  plan.virtual_stages = 2;
  const std::vector<std::string> errors = plan_errors(c, gpt(), plan, training(4));
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_THAT(errors[0], StartsWith("/parallelism/dp: "));
  EXPECT_THAT(errors[1], StartsWith("/parallelism/ep: "));
  EXPECT_THAT(errors[2], StartsWith("/parallelism/virtual_stages: "));
}

TEST(LoweringPlanErrors, BadAxisOrderNamesTheAxisOrder) {
  // The loader accepts any list of axis names (duplicates included) and leaves the
  // permutation check to the lowering, which must then point at axis_order.
  const Cluster c = gpus(1, 4);
  ParallelPlan plan;
  plan.axis_order = {ParallelAxis::kTp, ParallelAxis::kTp, ParallelAxis::kDp, ParallelAxis::kPp};
  EXPECT_THAT(only_error(c, gpt(), plan, training(4)), StartsWith("/parallelism/axis_order: "));
}

// ---------------------------------------------------------------------------------------
// Placement and determinism.

TEST(LoweringPlacement, AxisOrderDecidesWhichRanksFormTensorGroups) {
  // dp innermost: TP partners are two apart, {0, 2} and {1, 3}, so on 2 x 2 GPUs the TP
  // groups span nodes while the data-parallel pairs stay inside them.
  const Cluster c = gpus(2, 2);
  ParallelPlan plan;
  plan.tp = 2;
  plan.axis_order = {ParallelAxis::kDp, ParallelAxis::kTp, ParallelAxis::kCp, ParallelAxis::kPp};
  const LoweredStep step = lower(c, gpt(), plan, training(2));
  std::set<std::vector<int>> tp_groups, dp_groups;
  for (const CollectiveCall* call : calls(step.graph, "tp ")) {
    tp_groups.insert(call->members);
    EXPECT_FALSE(call->analytical);
  }
  for (const CollectiveCall* call : calls(step.graph, "grad bucket"))
    dp_groups.insert(call->members);
  EXPECT_EQ(tp_groups, (std::set<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(dp_groups, (std::set<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(step.roles[1].dp, 1);
  EXPECT_EQ(step.roles[2].tp, 1);
  run(c, step);
}

TEST(LoweringPlacement, RankMapMovesStages) {
  // pp 2 on one node with the map {1, 0}: stage 0 (position 0) runs on rank 1.
  const Cluster c = gpus(1, 2);
  ParallelPlan plan;
  plan.pp = 2;
  plan.rank_map = {1, 0};
  const LoweredStep step = lower(c, gpt(), plan, training(2));
  EXPECT_EQ(step.roles[1].pp, 0);
  EXPECT_EQ(step.roles[0].pp, 1);
  EXPECT_EQ(step.roles[1].first_layer, 0);
  EXPECT_EQ(count_tasks(step.graph, 1, TaskKind::kSend, "send act"), 2);
  EXPECT_EQ(count_tasks(step.graph, 0, TaskKind::kSend, "send act"), 0);
  run(c, step);
}

TEST(LoweringDeterminism, SameInputSameGraphSameEndTime) {
  const Cluster c = gpus(2, 4);
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 2;
  plan.zero_stage = 1;  // dp 2
  const LoweredStep a = lower(c, gpt(), plan, training(8));
  const LoweredStep b = lower(c, gpt(), plan, training(8));
  ASSERT_EQ(a.graph.tasks().size(), b.graph.tasks().size());
  ASSERT_EQ(a.graph.collectives().size(), b.graph.collectives().size());
  for (size_t i = 0; i < a.graph.tasks().size(); ++i) {
    EXPECT_EQ(a.graph.tasks()[i].name, b.graph.tasks()[i].name);
    EXPECT_EQ(a.graph.tasks()[i].duration, b.graph.tasks()[i].duration);
  }
  const Ran ra = run(c, a);
  const Ran rb = run(c, b);
  EXPECT_EQ(ra.result.end, rb.result.end);
  EXPECT_GT(ra.result.end, Duration::zero());
}

// Every plan type at once on 2 nodes x 4: tp 2 x pp 2 x dp 2 with sequence parallelism,
// interleaving and ZeRO-2 still validates and completes.
TEST(LoweringCombined, HybridPlanRuns) {
  const Cluster c = gpus(2, 4);
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 2;
  plan.sequence_parallel = true;
  plan.schedule = PipelineSchedule::kInterleaved1F1B;
  plan.virtual_stages = 2;
  plan.zero_stage = 2;
  const LoweredStep step = lower(c, gpt(), plan, training(8));
  EXPECT_EQ(step.plan.dp, 2);
  EXPECT_EQ(step.micro_batches, 4);
  EXPECT_FALSE(calls(step.graph, "tp fwd").empty());
  EXPECT_FALSE(calls(step.graph, "grad bucket").empty());
  EXPECT_FALSE(calls(step.graph, "param gather").empty());
  run(c, step);
}

TEST(LoweringCombined, CpWithPipelineAndMoeRuns) {
  const Cluster c = gpus(2, 4);
  ParallelPlan plan;
  plan.cp = 2;
  plan.pp = 2;
  plan.ep = 2;
  plan.zero_stage = 3;
  const LoweredStep step = lower(c, moe(), plan, training(8));  // dp 2, m = 4
  EXPECT_EQ(step.plan.dp, 2);
  EXPECT_FALSE(calls(step.graph, "cp kv gather").empty());
  EXPECT_FALSE(calls(step.graph, "ep all-to-all fwd").empty());
  run(c, step);
}

}  // namespace
}  // namespace dtsim::models
