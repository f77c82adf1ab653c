// Tests of the memory model: ZeRO's worked example, Korthikanti et al.'s activation
// equations for GPT-3 175B, and activations of a hand-built layer under every split.
#include "models/memory_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "models/model_spec.h"
#include "models/workload.h"

namespace dtsim::models {
namespace {

// ZeRO (Rajbhandari et al. 2020) figure 1: 7.5B parameters, Nd = 64, mixed-precision Adam
// (K = 12): (2 + 2 + K) psi = 120 GB; stage 1 (4 + K / Nd) psi = 31.4 GB; stage 2
// (2 + (2 + K) / Nd) psi = 16.6 GB; stage 3 (2 + 2 + K) psi / Nd = 1.88 GB.
TEST(MemoryModelStates, ZeroPaperWorkedExample) {
  const int64_t psi = 7'500'000'000;
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    const ModelStateBytes z0 = model_state_bytes(psi, p, Optimizer::kAdam, 0, 64);
    EXPECT_DOUBLE_EQ(z0.weights, 15e9);
    EXPECT_DOUBLE_EQ(z0.gradients, 15e9);
    EXPECT_DOUBLE_EQ(z0.optimizer, 90e9);
    EXPECT_DOUBLE_EQ(z0.total(), 120e9);
    // 4.1875 psi, 2.21875 psi, 0.25 psi.
    EXPECT_DOUBLE_EQ(model_state_bytes(psi, p, Optimizer::kAdam, 1, 64).total(), 31.40625e9);
    EXPECT_DOUBLE_EQ(model_state_bytes(psi, p, Optimizer::kAdam, 2, 64).total(), 16.640625e9);
    EXPECT_DOUBLE_EQ(model_state_bytes(psi, p, Optimizer::kAdam, 3, 64).total(), 1.875e9);
    EXPECT_NEAR(model_state_bytes(psi, p, Optimizer::kAdam, 1, 64).total(), 31.4e9, 0.05e9);
    EXPECT_NEAR(model_state_bytes(psi, p, Optimizer::kAdam, 2, 64).total(), 16.6e9, 0.05e9);
    EXPECT_NEAR(model_state_bytes(psi, p, Optimizer::kAdam, 3, 64).total(), 1.88e9, 0.01e9);
  }
}

TEST(MemoryModelStates, EachStageShardsOneMoreState) {
  const int64_t psi = 1'000'000;
  const ModelStateBytes z2 = model_state_bytes(psi, Precision::kBf16, Optimizer::kAdamW, 2, 8);
  EXPECT_DOUBLE_EQ(z2.weights, 2e6);
  EXPECT_DOUBLE_EQ(z2.gradients, 2e6 / 8);
  EXPECT_DOUBLE_EQ(z2.optimizer, 12e6 / 8);
  // One data-parallel rank shards nothing.
  EXPECT_DOUBLE_EQ(model_state_bytes(psi, Precision::kBf16, Optimizer::kAdam, 3, 1).total(), 16e6);
}

TEST(MemoryModelStates, Fp32AdamHasNoMasterCopy) {
  // 4 bytes of weights, 4 of gradients, 8 of Adam momentum and variance.
  const int64_t psi = 1'000'000;
  const ModelStateBytes z0 = model_state_bytes(psi, Precision::kFp32, Optimizer::kAdam, 0, 4);
  EXPECT_DOUBLE_EQ(z0.weights, 4e6);
  EXPECT_DOUBLE_EQ(z0.gradients, 4e6);
  EXPECT_DOUBLE_EQ(z0.optimizer, 8e6);
  EXPECT_DOUBLE_EQ(model_state_bytes(psi, Precision::kFp32, Optimizer::kAdam, 3, 4).total(), 4e6);
}

TEST(MemoryModelStates, RejectsBadArguments) {
  EXPECT_THROW(model_state_bytes(-1, Precision::kBf16, Optimizer::kAdam, 0, 1),
               std::invalid_argument);
  EXPECT_THROW(model_state_bytes(1, Precision::kBf16, Optimizer::kAdam, 4, 1),
               std::invalid_argument);
  EXPECT_THROW(model_state_bytes(1, Precision::kBf16, Optimizer::kAdam, -1, 1),
               std::invalid_argument);
  EXPECT_THROW(model_state_bytes(1, Precision::kBf16, Optimizer::kAdam, 1, 0),
               std::invalid_argument);
}

// GPT-3 175B (Korthikanti et al. 2022, table 3): s = 2048, b = 1, h = 12288, a = 96, t = 8.
// sbh = 25,165,824 and 5as/h = 5 * 96 * 2048 / 12288 = 80.
constexpr int64_t kS = 2048;
constexpr int64_t kB = 1;
constexpr int64_t kH = 12288;
constexpr int64_t kA = 96;
constexpr double kSbh = 25'165'824.0;

TEST(MemoryModelKorthikanti, Gpt3Layer) {
  auto bytes = [](int tp, bool sp, Recompute r) {
    return korthikanti_layer_activation_bytes(kS, kB, kH, kA, tp, sp, r);
  };
  // No parallelism: sbh (34 + 80) = 114 sbh = 2,868,903,936.
  EXPECT_DOUBLE_EQ(bytes(1, false, Recompute::kNone), 2'868'903'936.0);
  EXPECT_DOUBLE_EQ(bytes(1, true, Recompute::kNone), 114 * kSbh);
  // Tensor parallel: sbh (10 + 24/8 + 80/8) = 23 sbh = 578,813,952.
  EXPECT_DOUBLE_EQ(bytes(8, false, Recompute::kNone), 578'813'952.0);
  // With sequence parallelism: sbh/8 (34 + 80) = 14.25 sbh = 358,612,992.
  EXPECT_DOUBLE_EQ(bytes(8, true, Recompute::kNone), 358'612'992.0);
  // Selective recompute: 34 sbh / 8 = 4.25 sbh = 106,954,752; without sequence parallelism
  // sbh (10 + 24/8) = 13 sbh = 327,155,712.
  EXPECT_DOUBLE_EQ(bytes(8, true, Recompute::kSelective), 106'954'752.0);
  EXPECT_DOUBLE_EQ(bytes(8, false, Recompute::kSelective), 327'155'712.0);
  EXPECT_DOUBLE_EQ(bytes(1, false, Recompute::kSelective), 34 * kSbh);
  // Full recompute keeps the 2sbh input: 50,331,648, or 6,291,456 split over the sequence.
  EXPECT_DOUBLE_EQ(bytes(8, false, Recompute::kFull), 50'331'648.0);
  EXPECT_DOUBLE_EQ(bytes(8, true, Recompute::kFull), 6'291'456.0);
}

Op saved_op(const char* name, TensorSplit saved_split, double saved, bool core = false) {
  Op op;
  op.name = name;
  op.saved_split = saved_split;
  op.saved_bytes = saved;
  op.attention_core = core;
  return op;
}

// A layer whose ops save distinct powers of two, so every sum names its terms.
Layer hand_built_layer() {
  Layer layer;
  layer.name = "block.0";
  layer.kind = LayerKind::kTransformer;
  layer.ops = {saved_op("ln", TensorSplit::kReplicated, 1000),
               saved_op("qkv", TensorSplit::kSequence, 2000),
               saved_op("fc1", TensorSplit::kColumn, 4000),
               saved_op("fc2", TensorSplit::kRow, 8000),
               saved_op("scores", TensorSplit::kHeads, 16000, true),
               saved_op("qk", TensorSplit::kHeads, 32000),
               saved_op("lm_head", TensorSplit::kVocab, 64000)};
  layer.output_bytes = 4096;
  return layer;
}

TEST(MemoryModelActivations, NoParallelismKeepsEveryOp) {
  const Layer layer = hand_built_layer();
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kNone, {}), 127000);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kSelective, {}), 111000);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kFull, {}), 2048);
}

TEST(MemoryModelActivations, TensorParallelSplitsAllButReplicatedAndSequence) {
  const Layer layer = hand_built_layer();
  const ActivationSplit tp2{2, false, 1};
  // 1000 + 2000 + (4000 + 8000 + 16000 + 32000 + 64000) / 2.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kNone, tp2), 65000);
  // Less the attention core's 16000 / 2.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kSelective, tp2), 57000);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kFull, tp2), 2048);
}

TEST(MemoryModelActivations, SequenceParallelSplitsSequenceOps) {
  const Layer layer = hand_built_layer();
  const ActivationSplit sp2{2, true, 1};
  // 1000 + 2000 / 2 + 124000 / 2.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kNone, sp2), 64000);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kSelective, sp2), 56000);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kFull, sp2), 1024);
}

TEST(MemoryModelActivations, ContextParallelSplitsEverything) {
  const Layer layer = hand_built_layer();
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kNone, {2, false, 2}), 32500);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kSelective, {2, true, 4}), 14000);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kFull, {2, true, 2}), 512);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(layer, 2048, Recompute::kFull, {1, false, 4}), 512);
}

TEST(MemoryModelActivations, RejectsBadSplits) {
  const Layer layer = hand_built_layer();
  EXPECT_THROW(layer_activation_bytes(layer, 0, Recompute::kNone, {0, false, 1}),
               std::invalid_argument);
  EXPECT_THROW(layer_activation_bytes(layer, 0, Recompute::kNone, {1, false, 0}),
               std::invalid_argument);
}

// The zoo's GPT-3 175B block, annotated op by op, sums to Korthikanti's equations.
TEST(MemoryModelActivations, Gpt3BlockMatchesKorthikanti) {
  const ModelPreset* preset = find_model_preset("gpt3-175b");
  ASSERT_NE(preset, nullptr);
  const Workload w = build_workload(preset->spec, WorkloadShape{1, 2048, Precision::kBf16});
  const auto block = std::find_if(w.layers.begin(), w.layers.end(),
                                  [](const Layer& l) { return l.name == "block.0"; });
  ASSERT_NE(block, w.layers.end());
  ASSERT_NE(block, w.layers.begin());
  const double input_bytes = std::prev(block)->output_bytes;
  for (int tp : {1, 2, 8}) {
    for (bool sp : {false, true}) {
      for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        const double got = layer_activation_bytes(*block, input_bytes, r, {tp, sp, 1});
        const double want = korthikanti_layer_activation_bytes(
            w.shape.seq_len, w.shape.micro_batch, w.spec.hidden, w.spec.heads, tp, sp, r);
        EXPECT_NEAR(got, want, 1e-9 * want)
            << "tp " << tp << " sp " << sp << " recompute " << recompute_name(r);
      }
    }
  }
}

}  // namespace
}  // namespace dtsim::models
