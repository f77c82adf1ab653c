// ResNets from a list of stages: torchvision's ResNet-18/34/101 counted exactly, the
// ResNet-50 preset rebuilt from its stages, and face recognition's ResNets (a 3x3 stride-1
// stem on 112x112 crops, the last map flattened into the embedding).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "models/model_spec.h"
#include "models/workload.h"

namespace dtsim::models {
namespace {

std::vector<CnnStage> stages(std::vector<int> blocks, ResnetBlock block) {
  std::vector<CnnStage> out;
  int64_t width = 64;
  for (size_t i = 0; i < blocks.size(); ++i, width *= 2) {
    out.push_back(CnnStage{blocks[i], width, i == 0 ? 1 : 2, block});
  }
  return out;
}

ModelSpec resnet(std::vector<int> blocks, ResnetBlock block) {
  ModelSpec s;
  s.name = "resnet";
  s.family = ModelFamily::kResnet;
  s.stages = stages(std::move(blocks), block);
  return s;
}

Workload build(const ModelSpec& spec, int64_t batch = 8) {
  return build_workload(spec, WorkloadShape{batch, 0, Precision::kFp16});
}

double macs_per_sample(const Workload& w, int64_t batch) {
  double flops = 0;
  for (const Layer& l : w.layers) {
    for (const Op& op : l.ops) {
      if (op.kind == OpKind::kConv || op.kind == OpKind::kMatmul) flops += op.fwd_flops;
    }
  }
  return flops / 2 / static_cast<double>(batch);
}

const Op* find(const Layer& l, std::string_view name) {
  for (const Op& op : l.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// torchvision's parameter counts (weights, biases and batch norms' scale and shift):
// resnet18 11,689,512, resnet34 21,797,672, resnet101 44,549,160, resnet152 60,192,808.
TEST(ResnetStages, TorchvisionResnetsCountedExactly) {
  EXPECT_TRUE(validate_model_spec(resnet({2, 2, 2, 2}, ResnetBlock::kBasic)).empty());
  EXPECT_EQ(build(resnet({2, 2, 2, 2}, ResnetBlock::kBasic)).params(), 11689512);
  EXPECT_EQ(build(resnet({3, 4, 6, 3}, ResnetBlock::kBasic)).params(), 21797672);
  EXPECT_EQ(build(resnet({3, 4, 23, 3}, ResnetBlock::kBottleneck)).params(), 44549160);
  EXPECT_EQ(build(resnet({3, 8, 36, 3}, ResnetBlock::kBottleneck)).params(), 60192808);
}

// torchvision: resnet18 1.81 GFLOPS and resnet34 3.66 (multiply-adds, 224x224). By hand for
// ResNet-18: stem 118.0M, conv2_x 4 x 115.6M, conv3_x 57.8M + 3 x 115.6M + 6.4M, and so
// on: 1.814G with the fc's 0.5M.
TEST(ResnetStages, BasicBlocksMultiplyAccumulates) {
  EXPECT_NEAR(macs_per_sample(build(resnet({2, 2, 2, 2}, ResnetBlock::kBasic)), 8) / 1.8142e9, 1,
              0.001);
  EXPECT_NEAR(macs_per_sample(build(resnet({3, 4, 6, 3}, ResnetBlock::kBasic)), 8) / 3.6639e9, 1,
              0.001);
  // A basic block of stage 2 onwards projects its shortcut in its first block only; conv2_x
  // of ResNet-18 keeps 64 channels at stride 1 and projects nothing.
  const Workload w = build(resnet({2, 2, 2, 2}, ResnetBlock::kBasic));
  ASSERT_EQ(w.layers[1].name, "conv2_x.0");
  EXPECT_EQ(find(w.layers[1], "downsample.conv"), nullptr);
  ASSERT_EQ(w.layers[3].name, "conv3_x.0");
  const Op* projection = find(w.layers[3], "downsample.conv");
  ASSERT_NE(projection, nullptr);
  EXPECT_EQ(projection->gemm.m, 8 * 28 * 28);
  EXPECT_EQ(projection->gemm.n, 128);
  EXPECT_EQ(projection->gemm.k, 64);
  // The add reads the block's last batch norm and the projection.
  const Op* add = find(w.layers[3], "add");
  ASSERT_NE(add, nullptr);
  ASSERT_EQ(add->reads.size(), 2u);
  EXPECT_EQ(w.layers[3].ops[static_cast<size_t>(add->reads[0])].name, "bn_b");
  EXPECT_EQ(w.layers[3].ops[static_cast<size_t>(add->reads[1])].name, "downsample.bn");
}

// The preset is the same builder on He et al.'s stages; this pins the stage list itself
// to torchvision's ResNet-50 (25,557,032 parameters, 4.09 G multiply-adds at 224x224).
TEST(ResnetStages, ResNet50FromItsStagesIsThePreset) {
  const Workload preset = build(find_model_preset("resnet50")->spec);
  const Workload staged = build(resnet({3, 4, 6, 3}, ResnetBlock::kBottleneck));
  EXPECT_EQ(staged.params(), 25557032);
  EXPECT_NEAR(macs_per_sample(staged, 8) / 4.0890e9, 1, 0.001);
  ASSERT_EQ(staged.layers.size(), preset.layers.size());
  for (size_t i = 0; i < preset.layers.size(); ++i) {
    const Layer& a = preset.layers[i];
    const Layer& b = staged.layers[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_DOUBLE_EQ(a.output_bytes, b.output_bytes) << a.name;
    ASSERT_EQ(a.ops.size(), b.ops.size()) << a.name;
    for (size_t j = 0; j < a.ops.size(); ++j) {
      EXPECT_EQ(a.ops[j].name, b.ops[j].name);
      EXPECT_EQ(a.ops[j].gemm, b.ops[j].gemm) << a.name << " " << a.ops[j].name;
      EXPECT_EQ(a.ops[j].params, b.ops[j].params);
      EXPECT_DOUBLE_EQ(a.ops[j].fwd_bytes, b.ops[j].fwd_bytes);
      EXPECT_DOUBLE_EQ(a.ops[j].saved_bytes, b.ops[j].saved_bytes);
      EXPECT_EQ(a.ops[j].reads, b.ops[j].reads);
    }
  }
}

// InsightFace's ResNets on 112x112 crops: a 3x3 stride-1 stem without a pool, four stages
// that each halve the map (56, 28, 14, 7), the last map of 512 x 7 x 7 flattened into the
// 512-wide embedding.
ModelSpec face_backbone() {
  ModelSpec s;
  s.name = "face-r50";
  s.family = ModelFamily::kClassifier;
  s.backbone = "resnet";
  s.image_size = 112;
  s.stem = CnnStem{64, 3, 1, false};
  s.stages = stages({3, 4, 14, 3}, ResnetBlock::kBasic);
  s.stages[0].stride = 2;
  s.feature_pool = FeaturePool::kFlatten;
  s.hidden = 512 * 7 * 7;
  s.embedding = 512;
  s.classes = 1000;
  return s;
}

TEST(ResnetStages, FaceRecognitionBackboneFlattensItsLastMap) {
  const ModelSpec spec = face_backbone();
  ASSERT_THAT(validate_model_spec(spec), ::testing::IsEmpty());
  const Workload w = build(spec, 16);
  const Op* stem = find(w.layers.front(), "conv1");
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->gemm.m, 16 * 112 * 112);  // stride 1, padded by 1
  EXPECT_EQ(stem->gemm.k, 3 * 3 * 3);
  EXPECT_EQ(find(w.layers.front(), "maxpool"), nullptr);
  // No pool layer: the last block's output goes to the embedding's fc whole.
  const Layer& last_block = w.layers[w.layers.size() - 3];
  EXPECT_EQ(last_block.name, "conv5_x.2");
  EXPECT_DOUBLE_EQ(last_block.output_bytes, 16.0 * 512 * 7 * 7 * 2);
  const Layer& embedding = w.layers[w.layers.size() - 2];
  ASSERT_EQ(embedding.name, "embedding");
  EXPECT_EQ(find(embedding, "fc")->gemm.k, 25088);
  EXPECT_EQ(find(embedding, "fc")->params, 25088 * 512);

  ModelSpec wrong = spec;
  wrong.hidden = 512;
  EXPECT_THAT(validate_model_spec(wrong),
              ::testing::ElementsAre(
                  "hidden: must be 25088, the features of the resnet backbone, got 512"));
  wrong.feature_pool = FeaturePool::kAverage;
  EXPECT_THAT(validate_model_spec(wrong), ::testing::IsEmpty());
}

TEST(ResnetStages, ProblemsNameTheStageAndField) {
  ModelSpec none = resnet({}, ResnetBlock::kBasic);
  EXPECT_THAT(validate_model_spec(none),
              ::testing::ElementsAre(::testing::HasSubstr("stages: the resnet family is built")));
  ModelSpec bad = resnet({2, 2}, ResnetBlock::kBasic);
  bad.stages[1].stride = 0;
  bad.stages[0].width = 0;
  bad.stem.kernel = 40;
  EXPECT_THAT(validate_model_spec(bad),
              ::testing::UnorderedElementsAre("stages/0/width: must be positive, got 0",
                                              "stages/1/stride: must be between 1 and 16, got 0",
                                              "stem/kernel: must be between 1 and 31, got 40"));
  ModelSpec huge = resnet({10000, 1}, ResnetBlock::kBasic);
  EXPECT_THAT(validate_model_spec(huge),
              ::testing::ElementsAre("stages: at most 10000 blocks in all, got 10001 by stage 1"));
  ModelSpec wide = resnet({100, 100}, ResnetBlock::kBottleneck);
  wide.stages[1].width = 1 << 20;
  EXPECT_THAT(validate_model_spec(wide),
              ::testing::ElementsAre(::testing::HasSubstr("parameters, more than the 1e+15")));
  // The stage keys belong to the resnet family only.
  const ModelSpec preset = find_model_preset("resnet50")->spec;
  const std::vector<std::string_view> keys = model_keys_used(preset);
  EXPECT_THAT(keys, ::testing::Not(::testing::Contains("stages")));
  EXPECT_THAT(model_keys_used(face_backbone()),
              ::testing::IsSupersetOf({"stages", "stem", "feature_pool"}));
}

}  // namespace
}  // namespace dtsim::models
