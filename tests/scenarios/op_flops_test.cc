// The op signatures of lowered training steps against closed forms written from the
// papers, not from the zoo: a step's matrix-unit FLOPs summed over every op of every
// compute task of every rank. The kinds that count are the GEMM-like kernels (GEMMs,
// batched GEMMs, FlashAttention, convolutions) and the MoE router's GEMM; the vector
// kernels (norms, softmax, pointwise, casts, the optimizer) are left out, as the closed
// forms leave them out.
#include <gtest/gtest.h>

#include <set>
#include <stop_token>
#include <string>

#include "models/model_spec.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using test_support::prepare;
using test_support::prepare_file;
using test_support::Prepared;

std::string example(const std::string& name) {
  return std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/" + name + ".json";
}

bool counted(KernelKind k) {
  return k == KernelKind::kGemm || k == KernelKind::kBatchedGemm || k == KernelKind::kGroupedGemm ||
         k == KernelKind::kFlashAttention || k == KernelKind::kConv || k == KernelKind::kRouter;
}

// Matrix FLOPs of the step, and whether every compute task carried its ops.
struct StepFlops {
  double flops = 0;
  int64_t tasks_without_ops = 0;
  int64_t compute_tasks = 0;
};

StepFlops step_flops(const LoweredScenario& l) {
  StepFlops out;
  for (const TaskView t : l.graph.tasks()) {
    if (t.kind != TaskKind::kCompute) continue;
    ++out.compute_tasks;
    if (t.ops == kNoOps) {
      ++out.tasks_without_ops;
      continue;
    }
    for (const OpSignature& op : l.graph.op_list(t.ops)) {
      if (counted(op.kind)) out.flops += op.flops;
    }
  }
  return out;
}

const models::ModelSpec& preset(const char* name) { return models::find_model_preset(name)->spec; }

// torchvision's ResNet-50 v1.5 on 224 x 224 images, its multiply-adds written out layer by
// layer (stem, four stages of bottlenecks with the stride on the 3x3, the fc): 4.09 G.
double resnet50_macs(bool with_fc) {
  double macs = 112.0 * 112 * 64 * 3 * 7 * 7;  // stem 7x7/2
  int64_t in = 64;
  int64_t size = 56;  // after the 3x3/2 max pool
  const int blocks[] = {3, 4, 6, 3};
  const int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < blocks[stage]; ++b) {
      const int64_t w = widths[stage];
      const int64_t out_size = stage > 0 && b == 0 ? size / 2 : size;
      const double in_area = static_cast<double>(size * size);
      const double out_area = static_cast<double>(out_size * out_size);
      macs += in_area * w * in;                   // 1x1 reduce
      macs += out_area * w * w * 9;               // 3x3 (stride here)
      macs += out_area * 4 * w * w;               // 1x1 expand
      if (b == 0) macs += out_area * 4 * w * in;  // 1x1 downsample
      in = 4 * w;
      size = out_size;
    }
  }
  return macs + (with_fc ? 2048.0 * 1000 : 0);
}

TEST(OpFlops, Gpt3WithFullRecomputationMatchesNarayanan) {
  // Narayanan et al. 2021, section 5.1: with activation recomputation a step runs
  // 96 B s l h^2 (1 + s / (6h) + V / (16 l h)) FLOPs.
  const auto p = prepare_file(example("gpt3-175b-1024xA100"));
  const StepFlops f = step_flops(p->lowered);
  EXPECT_EQ(f.tasks_without_ops, 0);
  const models::ModelSpec& m = preset("gpt3-175b");
  const double B = 1536, s = 2048, l = m.layers, h = static_cast<double>(m.hidden),
               V = static_cast<double>(m.vocab);
  const double expected = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(f.flops / expected, 1, 1e-9);
}

TEST(OpFlops, LlamaWithSelectiveRecomputationIsSixNTokensPlusAttention) {
  // 6 N per token for the linear layers' N weights (2 forward, 4 backward: Kaplan et al.
  // 2020), attention's QK^T and PV 4 s q per token per layer forward (x 3 with backward),
  // and selective recomputation's rerun of them once more (Korthikanti et al. 2022).
  const auto p = prepare_file(example("llama3-70b-64xH100"));
  const StepFlops f = step_flops(p->lowered);
  EXPECT_EQ(f.tasks_without_ops, 0);
  const models::ModelSpec& m = preset("llama3-70b");
  const double h = static_cast<double>(m.hidden), q = static_cast<double>(m.q_width()),
               kv = static_cast<double>(m.kv_heads_or_heads() * m.head_dim()),
               ffn = static_cast<double>(m.ffn_hidden), V = static_cast<double>(m.vocab),
               l = m.layers, s = 8192, tokens = 64 * s;
  const double linear = l * (h * (q + 2 * kv) + q * h + 3 * h * ffn) + h * V;
  const double attention = 4 * s * q * l * tokens;
  EXPECT_NEAR(f.flops / (6 * linear * tokens + 3 * attention + attention), 1, 1e-9);
}

TEST(OpFlops, MixtralCountsTheRoutedExpertsAndTheRouter) {
  // Active weights per token: attention, top_k of the experts' SwiGLU, the router's
  // h x E GEMM, the head; 6 N_active per token, attention as above (no recomputation). With
  // tensor parallelism an MoE model runs sequence parallelism (as Megatron-Core requires):
  // each rank routes its own sequence shard, so the router counts once.
  const auto p = prepare(nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 2, "device": "H100", "devices_per_node": 8,
                           "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "single_switch"}},
    "model": {"preset": "mixtral-8x7b", "layers": 4},
    "training": {"global_batch": 8, "micro_batch": 1, "seq_len": 1024, "recompute": "none"},
    "parallelism": {"tp": 2, "ep": 4, "sequence_parallel": true}})"));
  const StepFlops f = step_flops(p->lowered);
  EXPECT_EQ(f.tasks_without_ops, 0);
  const models::ModelSpec& m = preset("mixtral-8x7b");
  const double h = static_cast<double>(m.hidden), q = static_cast<double>(m.q_width()),
               kv = static_cast<double>(m.kv_heads_or_heads() * m.head_dim()),
               ffn = static_cast<double>(m.ffn_hidden), V = static_cast<double>(m.vocab), l = 4,
               s = 1024, tokens = 8 * s;
  const double active =
      l * (h * (q + 2 * kv) + q * h + m.top_k * 3 * h * ffn + h * m.experts) + h * V;
  EXPECT_NEAR(f.flops / (6 * active * tokens + 3 * 4 * s * q * l * tokens), 1, 1e-9);
}

TEST(OpFlops, ResNet50IsThreeTimesItsForwardConvolutions) {
  // Forward 2 x 4.09 G multiply-adds per image (the count above); backward twice that.
  const auto p = prepare_file(example("resnet50-256xP100"));
  const StepFlops f = step_flops(p->lowered);
  EXPECT_EQ(f.tasks_without_ops, 0);
  const double per_image = 2 * resnet50_macs(true);
  EXPECT_NEAR(per_image / 2 / 1e9, 4.09, 0.01);  // torchvision's published 4.09 GMACs
  EXPECT_NEAR(f.flops / (3 * per_image * 8192), 1, 1e-9);
}

TEST(OpFlops, ShardedClassifierAddsItsClassesGemm) {
  // Song et al. 2020: the backbone on every replica, and one 2048 x C GEMM over the whole
  // batch split over all ranks by classes.
  const auto p = prepare_file(example("classifier-100m-classes-256xV100"));
  const StepFlops f = step_flops(p->lowered);
  EXPECT_EQ(f.tasks_without_ops, 0);
  const double classes = static_cast<double>(preset("classifier-100m").classes);
  const double per_image = 2 * (resnet50_macs(false) + 2048 * classes);
  EXPECT_NEAR(f.flops / (3 * per_image * 8192), 1, 1e-9);
}

// Every bundled training example: each compute task carries the kernels it runs.
TEST(OpFlops, EveryComputeTaskOfTheBundledExamplesCarriesItsOps) {
  for (const char* name :
       {"gpt3-175b-1024xA100", "llama3-70b-64xH100", "resnet50-256xP100", "hetero-a100-v100-gpt",
        "geo-2regions-llama3-8b", "classifier-100m-classes-256xV100"}) {
    const auto p = prepare_file(example(name));
    const StepFlops f = step_flops(p->lowered);
    EXPECT_GT(f.compute_tasks, 0) << name;
    EXPECT_EQ(f.tasks_without_ops, 0) << name;
    if (p->lowered.local_graph) {
      for (const TaskView t : p->lowered.local_graph->tasks()) {
        if (t.kind == TaskKind::kCompute) {
          EXPECT_NE(t.ops, kNoOps) << name << " local step";
        }
      }
    }
    // The tally counts what the tasks hold: every op priced by the roofline.
    EXPECT_GT(p->lowered.costs.of(CostSource::kRoofline).ops, 0) << name;
    EXPECT_EQ(p->lowered.costs.of(CostSource::kMeasured).ops, 0) << name;
    EXPECT_EQ(p->lowered.costs.launches.ops, p->lowered.costs.of(CostSource::kRoofline).ops);
  }
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// Lowering stops at the next rank once asked, and says the result is cancelled.
TEST(ScenarioLowering, StopsAtTheNextRankWhenAsked) {
  const auto loaded = load_scenario_file(example("gpt3-175b-1024xA100"));
  std::stop_source stop;
  RunControl control;
  control.stop = stop.get_token();
  int64_t reports = 0;
  control.progress = [&](std::string_view phase, int64_t done, int64_t total) {
    EXPECT_EQ(phase, "lowering");
    EXPECT_EQ(total, 1024);
    ++reports;
    if (done == 10) stop.request_stop();
  };
  const LoweredScenario l = lower_scenario(loaded, test_support::roofline(), control);
  EXPECT_TRUE(l.cancelled);
  EXPECT_EQ(reports, 11);  // ranks 0..10 reported; the stop is seen before rank 11
  std::set<int> ranks;
  for (const TaskView t : l.graph.tasks()) ranks.insert(t.rank);
  EXPECT_EQ(ranks.size(), 11u);
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// A task-graph task priced by FLOPs goes through the cost model the caller chose: a GEMM of
// unknown shape, at gemm_max x f / (f + gemm_half_flops) of its dtype's peak times the
// sustained fraction, plus one launch; a task with a duration keeps it and is counted as
// given.
TEST(ScenarioLowering, FlopTasksArePricedByTheChosenCostModel) {
  const auto p = test_support::prepare(nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 2,
                           "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "none"}},
    "workload": {"kind": "task_graph", "tasks": [
      {"id": "gemm", "ranks": "all", "kind": "compute", "flops": "40TFLOP", "dtype": "bf16"},
      {"id": "wait", "rank": 0, "kind": "compute", "duration": "3ms", "deps": ["gemm"]}]}})"));
  const DeviceSpec& h100 = *p->scenario.cluster.devices[0].spec;
  const DeviceEfficiency& e = h100.efficiency;
  const double f = 40e12;
  const double rate = h100.peak_for(DType::kBf16).flops_per_second() * e.gemm_max * f /
                      (f + e.gemm_half_flops) * e.sustained_compute_fraction;
  const TaskView gemm = p->lowered.graph.task(0);
  EXPECT_NEAR(gemm.duration.seconds(), f / rate + e.kernel_launch.seconds(), 2e-9);
  EXPECT_EQ(p->lowered.graph.task(2).duration, Duration::ms(3));
  EXPECT_EQ(p->lowered.costs.of(CostSource::kRoofline).ops, 2);
  EXPECT_EQ(p->lowered.costs.given.ops, 1);
  EXPECT_EQ(p->lowered.costs.given.time, Duration::ms(3));
}

// bf16 on a V100, which has no bf16 math, runs at its fp32 rate rather than being an error.
TEST(ScenarioLowering, FlopTasksTakeTheMathThatCarriesTheirDtype) {
  const auto p = test_support::prepare(nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 1, "device": "V100", "devices_per_node": 1,
                           "nic_bandwidth": "100Gbps"}], "fabric": {"kind": "none"}},
    "workload": {"kind": "task_graph", "tasks": [
      {"id": "bf16", "rank": 0, "kind": "compute", "flops": "1TFLOP", "dtype": "bf16"},
      {"id": "fp32", "rank": 0, "kind": "compute", "flops": "1TFLOP", "dtype": "fp32"}]}})"));
  EXPECT_EQ(p->lowered.graph.task(0).duration, p->lowered.graph.task(1).duration);
}

}  // namespace
}  // namespace dtsim
