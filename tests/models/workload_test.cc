// The workload IR against published figures: parameter counts of the presets, Megatron-LM's
// FLOPs formula (Narayanan et al. 2021), Korthikanti et al. 2022's activation counts, the
// MACs of the vision networks; plus precision, names and spec validation.
#include "models/workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "models/precision.h"

namespace dtsim::models {
namespace {

using ::testing::HasSubstr;

ModelSpec preset_spec(std::string_view name) {
  const ModelPreset* preset = find_model_preset(name);
  if (preset == nullptr) throw std::runtime_error("no preset " + std::string(name));
  return preset->spec;
}

Workload build(std::string_view preset, int64_t micro_batch = 1, int64_t seq_len = 0,
               Precision precision = Precision::kBf16) {
  return build_workload(preset_spec(preset), WorkloadShape{micro_batch, seq_len, precision});
}

const Layer& layer_named(const Workload& w, std::string_view name) {
  for (const Layer& layer : w.layers) {
    if (layer.name == name) return layer;
  }
  throw std::runtime_error("no layer " + std::string(name));
}

const Op& op_named(const Layer& layer, std::string_view name) {
  for (const Op& op : layer.ops) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op " + std::string(name) + " in " + layer.name);
}

bool is_gemm(const Op& op) { return op.kind == OpKind::kMatmul || op.kind == OpKind::kAttention; }

// Forward + backward FLOPs of the GEMMs (linear layers and attention) of a workload.
double gemm_flops(const Workload& w) {
  double total = 0;
  for (const Layer& layer : w.layers) {
    for (const Op& op : layer.ops) {
      if (is_gemm(op)) total += op.fwd_flops + op.bwd_flops;
    }
  }
  return total;
}

// Forward multiply-accumulates of one image: convolutions and fully connected layers.
double macs_per_sample(const Workload& w) {
  double flops = 0;
  for (const Layer& layer : w.layers) {
    for (const Op& op : layer.ops) {
      if (op.kind == OpKind::kConv || op.kind == OpKind::kMatmul) flops += op.fwd_flops;
    }
  }
  return flops / 2 / static_cast<double>(w.shape.micro_batch);
}

struct SavedBytes {
  double sequence = 0;  // divided only by sequence parallelism
  double split = 0;     // divided by tensor parallelism
  double replicated = 0;
  double core = 0;  // on attention-core ops
  double total() const { return sequence + split + replicated; }
};

SavedBytes saved_bytes(const Layer& layer) {
  SavedBytes s;
  for (const Op& op : layer.ops) {
    if (op.saved_split == TensorSplit::kSequence) {
      s.sequence += op.saved_bytes;
    } else if (op.saved_split == TensorSplit::kReplicated) {
      s.replicated += op.saved_bytes;
    } else {
      s.split += op.saved_bytes;
    }
    if (op.attention_core) s.core += op.saved_bytes;
  }
  return s;
}

// ---------------------------------------------------------------------------------------
// Precision and optimizer

TEST(PrecisionTest, NamesRoundTrip) {
  for (Precision p :
       {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16, Precision::kFp8}) {
    EXPECT_EQ(precision_from_name(precision_name(p)), p);
  }
  for (Optimizer o : {Optimizer::kSgdMomentum, Optimizer::kAdam, Optimizer::kAdamW,
                      Optimizer::kLars, Optimizer::kLamb}) {
    EXPECT_EQ(optimizer_from_name(optimizer_name(o)), o);
  }
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    EXPECT_EQ(recompute_from_name(recompute_name(r)), r);
  }
  EXPECT_EQ(optimizer_name(Optimizer::kSgdMomentum), "sgd");
  EXPECT_EQ(precision_name(Precision::kBf16), "bf16");
  EXPECT_EQ(precision_from_name("float16"), std::nullopt);
  EXPECT_EQ(optimizer_from_name("Adam"), std::nullopt);
  EXPECT_EQ(recompute_from_name("partial"), std::nullopt);
}

TEST(PrecisionTest, DtypesAndActivationBytes) {
  EXPECT_EQ(math_dtype(Precision::kFp32), DType::kFp32);
  EXPECT_EQ(math_dtype(Precision::kTf32), DType::kTf32);
  EXPECT_EQ(math_dtype(Precision::kFp16), DType::kFp16);
  EXPECT_EQ(math_dtype(Precision::kBf16), DType::kBf16);
  EXPECT_EQ(math_dtype(Precision::kFp8), DType::kFp8);
  EXPECT_EQ(activation_bytes(Precision::kFp32), 4);
  EXPECT_EQ(activation_bytes(Precision::kTf32), 4);
  EXPECT_EQ(activation_bytes(Precision::kBf16), 2);
  EXPECT_EQ(activation_bytes(Precision::kFp8), 2);
  EXPECT_FALSE(is_mixed_precision(Precision::kTf32));
  EXPECT_TRUE(is_mixed_precision(Precision::kFp16));
  EXPECT_TRUE(is_mixed_precision(Precision::kFp8));
}

// ZeRO (Rajbhandari et al. 2020), section 3.1: mixed-precision Adam keeps 2 + 2 + 12 bytes.
TEST(PrecisionTest, PerParameterBytesFollowZero) {
  auto expect = [](Precision p, Optimizer o, int w, int g, int s) {
    const PerParameterBytes b = per_parameter_bytes(p, o);
    EXPECT_EQ(b.weights, w) << precision_name(p) << " " << optimizer_name(o);
    EXPECT_EQ(b.gradients, g) << precision_name(p) << " " << optimizer_name(o);
    EXPECT_EQ(b.optimizer, s) << precision_name(p) << " " << optimizer_name(o);
  };
  expect(Precision::kBf16, Optimizer::kAdam, 2, 2, 12);
  expect(Precision::kFp16, Optimizer::kAdamW, 2, 2, 12);
  expect(Precision::kFp8, Optimizer::kLamb, 2, 2, 12);
  expect(Precision::kFp32, Optimizer::kAdam, 4, 4, 8);
  expect(Precision::kTf32, Optimizer::kLamb, 4, 4, 8);
  expect(Precision::kBf16, Optimizer::kSgdMomentum, 2, 2, 8);
  expect(Precision::kBf16, Optimizer::kLars, 2, 2, 8);
  expect(Precision::kFp32, Optimizer::kSgdMomentum, 4, 4, 4);
}

TEST(PrecisionTest, OptimizerStepCosts) {
  // Adam: read the gradient (2), read and write master, momentum, variance (24), write the
  // bf16 weights (2); in fp32: gradient 4, states 16, weights read and written 8.
  EXPECT_EQ(optimizer_step_bytes_per_parameter(Precision::kBf16, Optimizer::kAdam), 28);
  EXPECT_EQ(optimizer_step_bytes_per_parameter(Precision::kFp32, Optimizer::kAdam), 28);
  EXPECT_EQ(optimizer_step_bytes_per_parameter(Precision::kBf16, Optimizer::kSgdMomentum), 20);
  EXPECT_EQ(optimizer_step_bytes_per_parameter(Precision::kFp32, Optimizer::kSgdMomentum), 20);
  EXPECT_GT(optimizer_step_bytes_per_parameter(Precision::kBf16, Optimizer::kLamb),
            optimizer_step_bytes_per_parameter(Precision::kBf16, Optimizer::kAdam));
  EXPECT_EQ(optimizer_step_flops_per_parameter(Optimizer::kSgdMomentum), 4);
  EXPECT_EQ(optimizer_step_flops_per_parameter(Optimizer::kAdam), 12);
  EXPECT_GT(optimizer_step_flops_per_parameter(Optimizer::kLamb),
            optimizer_step_flops_per_parameter(Optimizer::kAdam));
}

// ---------------------------------------------------------------------------------------
// Model specs and presets

TEST(ModelSpecTest, FamilyNamesRoundTrip) {
  for (const char* name : {"gpt", "llama", "moe", "bert", "resnet50", "resnet", "alexnet", "vgg16",
                           "mlp", "classifier"}) {
    const std::optional<ModelFamily> f = model_family_from_name(name);
    ASSERT_TRUE(f.has_value()) << name;
    EXPECT_EQ(model_family_name(*f), name);
  }
  EXPECT_EQ(model_family_from_name("resnet18"), std::nullopt);
  EXPECT_TRUE(is_transformer(ModelFamily::kBert));
  EXPECT_TRUE(is_transformer(ModelFamily::kMoe));
  EXPECT_FALSE(is_transformer(ModelFamily::kClassifier));
}

TEST(ModelSpecTest, EveryPresetIsValidAndBuilds) {
  std::set<std::string_view> names;
  for (const ModelPreset& preset : model_presets()) {
    EXPECT_TRUE(names.insert(preset.name).second) << "duplicate " << preset.name;
    EXPECT_EQ(preset.spec.name, preset.name);
    EXPECT_FALSE(preset.description.empty()) << preset.name;
    EXPECT_THAT(validate_model_spec(preset.spec), ::testing::IsEmpty()) << preset.name;
    const Workload w = build_workload(preset.spec, WorkloadShape{});
    EXPECT_FALSE(w.layers.empty()) << preset.name;
    for (const Layer& layer : w.layers) {
      for (const Op& op : layer.ops) {
        EXPECT_FALSE(op.name.empty()) << preset.name << " " << layer.name;
        EXPECT_GE(op.fwd_flops, 0) << preset.name << " " << layer.name << " " << op.name;
        EXPECT_GE(op.bwd_flops, 0) << preset.name << " " << layer.name << " " << op.name;
        EXPECT_GT(op.fwd_bytes, 0) << preset.name << " " << layer.name << " " << op.name;
        EXPECT_GE(op.params, 0) << preset.name << " " << layer.name << " " << op.name;
        EXPECT_GE(op.saved_bytes, 0) << preset.name << " " << layer.name << " " << op.name;
      }
      EXPECT_GT(layer.output_bytes, 0) << preset.name << " " << layer.name;
    }
  }
  for (const char* name : {"gpt3-175b", "llama3-8b", "mixtral-8x7b", "nemotron4-340b", "bert-large",
                           "resnet50", "alexnet", "vgg16", "classifier-100m"}) {
    EXPECT_NE(find_model_preset(name), nullptr) << name;
  }
  EXPECT_EQ(find_model_preset("gpt5"), nullptr);
}

struct PublishedParams {
  const char* preset;
  double params;
  double tolerance;  // relative
};

// Published parameter counts: GPT-3 175B as Narayanan et al. 2021 (Table 1) count it with the
// padded vocabulary; Llama 3 and 3.1 per Meta's model cards; Mixtral per Jiang et al. 2024;
// Nemotron-4 340B: 331.6B non-embedding + 9.4B embedding (NVIDIA 2024); torchvision's exact
// counts for the vision networks.
TEST(ModelSpecTest, PresetParameterCountsMatchPublishedFigures) {
  const PublishedParams published[] = {
      {"gpt2", 124.4e6, 0.005},          {"gpt3-1.3b", 1.3e9, 0.02},
      {"gpt3-13b", 13.0e9, 0.02},        {"gpt3-175b", 174.6e9, 0.005},
      {"gpt-22b", 22.0e9, 0.01},         {"mt-nlg-530b", 529.6e9, 0.005},
      {"gpt-1t", 1008.0e9, 0.005},       {"nemotron4-340b", 341.0e9, 0.01},
      {"llama3-8b", 8.03e9, 0.005},      {"llama3-70b", 70.6e9, 0.005},
      {"llama3.1-405b", 405.9e9, 0.005}, {"mixtral-8x7b", 46.7e9, 0.005},
      {"bert-base", 110e6, 0.01},        {"resnet50", 25557032, 1e-12},
      {"alexnet", 61100840, 1e-12},      {"vgg16", 138357544, 1e-12},
  };
  for (const PublishedParams& p : published) {
    const double params = static_cast<double>(build(p.preset).params());
    EXPECT_NEAR(params / p.params, 1.0, p.tolerance) << p.preset << ": " << params;
  }
  // BERT-Large: "340M" in Devlin et al. 2019; 335-336M counted with the pre-training heads.
  const double bert = static_cast<double>(build("bert-large").params());
  EXPECT_GT(bert, 335e6);
  EXPECT_LT(bert, 340e6);
  // The MNIST MLP: 784-800-800-10 with biases.
  EXPECT_EQ(build("mlp-mnist").params(), 784 * 800 + 800 + 800 * 800 + 800 + 800 * 10 + 10);
}

TEST(ModelSpecTest, ValidateNamesTheFieldOfEachProblem) {
  ModelSpec gpt = preset_spec("gpt3-1.3b");
  gpt.hidden = 1000;
  gpt.heads = 3;
  EXPECT_THAT(validate_model_spec(gpt),
              ::testing::ElementsAre("hidden: must be divisible by heads (hidden 1000, heads 3), or give head_dim"));

  ModelSpec llama = preset_spec("llama3-8b");
  llama.kv_heads = 5;
  llama.ffn_hidden = 0;
  llama.layers = 0;
  EXPECT_THAT(
      validate_model_spec(llama),
      ::testing::UnorderedElementsAre("layers: must be positive, got 0",
                                      "kv_heads: must divide heads (heads 32, kv_heads 5)",
                                      "ffn_hidden: must be positive for the llama family, got 0"));

  ModelSpec moe = preset_spec("mixtral-8x7b");
  moe.top_k = 3;
  moe.experts = 2;
  EXPECT_THAT(validate_model_spec(moe),
              ::testing::ElementsAre("top_k: must not exceed experts (top_k 3, experts 2)"));

  ModelSpec dense_with_experts = preset_spec("gpt3-1.3b");
  dense_with_experts.experts = 8;
  EXPECT_THAT(validate_model_spec(dense_with_experts),
              ::testing::ElementsAre(HasSubstr("experts: only the moe family")));

  ModelSpec small_image = preset_spec("alexnet");
  small_image.image_size = 32;
  EXPECT_THAT(validate_model_spec(small_image),
              ::testing::ElementsAre("image_size: must be at least 63 for alexnet, got 32"));

  ModelSpec classifier = preset_spec("classifier-100m");
  EXPECT_EQ(classifier.classes, 100'000'000);
  EXPECT_THAT(validate_model_spec(classifier), ::testing::IsEmpty());
  classifier.classes = 100'000'001;
  classifier.hidden = 1000;
  classifier.backbone = "resnet18";
  EXPECT_THAT(validate_model_spec(classifier),
              ::testing::UnorderedElementsAre(
                  "backbone: expected resnet50, resnet, alexnet, vgg16 or mlp, got \"resnet18\"",
                  "classes: must be between 1 and 100000000, got 100000001"));
  classifier.backbone = "vgg16";
  classifier.classes = 10;
  EXPECT_THAT(
      validate_model_spec(classifier),
      ::testing::ElementsAre("hidden: must be 4096, the features of the vgg16 backbone, got 1000"));

  ModelSpec mlp = preset_spec("mlp-mnist");
  mlp.input_features = 0;
  EXPECT_THAT(validate_model_spec(mlp),
              ::testing::ElementsAre("input_features: must be positive, got 0"));
}

TEST(WorkloadTest, BuildThrowsNamingTheFields) {
  ModelSpec spec = preset_spec("gpt3-1.3b");
  spec.hidden = 1000;
  spec.heads = 3;
  try {
    build_workload(spec, WorkloadShape{});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("gpt3-1.3b"));
    EXPECT_THAT(e.what(), HasSubstr("hidden: must be divisible by heads"));
  }
  EXPECT_THROW(
      {
        try {
          build(std::string_view("gpt3-1.3b"), 0);
        } catch (const std::invalid_argument& e) {
          EXPECT_THAT(e.what(), HasSubstr("micro_batch: must be positive, got 0"));
          throw;
        }
      },
      std::invalid_argument);
  ModelSpec no_seq = preset_spec("gpt3-1.3b");
  no_seq.seq_len = 0;
  EXPECT_THROW(build_workload(no_seq, WorkloadShape{}), std::invalid_argument);
  EXPECT_NO_THROW(build_workload(no_seq, WorkloadShape{1, 1024, Precision::kBf16}));
}

// ---------------------------------------------------------------------------------------
// Structure and names

TEST(WorkloadTest, EnumNames) {
  EXPECT_EQ(op_kind_name(OpKind::kMatmul), "matmul");
  EXPECT_EQ(op_kind_name(OpKind::kAttention), "attention");
  EXPECT_EQ(op_kind_name(OpKind::kRouter), "router");
  EXPECT_EQ(tensor_split_name(TensorSplit::kSequence), "sequence");
  EXPECT_EQ(tensor_split_name(TensorSplit::kVocab), "vocab");
  EXPECT_EQ(layer_kind_name(LayerKind::kTransformer), "transformer");
  EXPECT_EQ(layer_kind_name(LayerKind::kClassifier), "classifier");
}

TEST(WorkloadTest, TransformerLayersInOrder) {
  const Workload w = build("gpt3-1.3b", 2);
  ASSERT_EQ(w.layers.size(), 24u + 2u);
  EXPECT_EQ(w.layers.front().name, "embedding");
  EXPECT_EQ(w.layers.front().kind, LayerKind::kEmbedding);
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(w.layers[static_cast<size_t>(i) + 1].name, "block." + std::to_string(i));
    EXPECT_EQ(w.layers[static_cast<size_t>(i) + 1].kind, LayerKind::kTransformer);
  }
  EXPECT_EQ(w.layers.back().name, "head");
  EXPECT_EQ(w.layers.back().kind, LayerKind::kHead);
  const Layer& head = w.layers.back();
  EXPECT_EQ(op_named(head, "head.logits").split, TensorSplit::kVocab);
  EXPECT_EQ(op_named(head, "head.loss").split, TensorSplit::kVocab);
  EXPECT_EQ(op_named(head, "head.loss").kind, OpKind::kLoss);
  // Tied embeddings: the LM head owns no weights of its own.
  EXPECT_EQ(op_named(head, "head.logits").params, 0);
}

TEST(WorkloadTest, SequenceLengthResolves) {
  EXPECT_EQ(build("gpt3-175b").shape.seq_len, 2048);
  EXPECT_EQ(build("gpt3-175b").tokens_per_sample(), 2048);
  EXPECT_EQ(build("gpt3-175b", 1, 4096).tokens_per_sample(), 4096);
  EXPECT_EQ(build("llama3-8b").tokens_per_sample(), 8192);
  EXPECT_EQ(build("resnet50").tokens_per_sample(), 1);
  EXPECT_EQ(build("classifier-100m").tokens_per_sample(), 1);
}

TEST(WorkloadTest, GemmBackwardIsTwiceForward) {
  for (const char* preset : {"gpt3-1.3b", "llama3-8b", "mixtral-8x7b", "bert-large", "resnet50"}) {
    const Workload w = build(preset, 2, 512);
    for (const Layer& layer : w.layers) {
      for (const Op& op : layer.ops) {
        if (op.kind == OpKind::kMatmul || op.kind == OpKind::kAttention ||
            op.kind == OpKind::kConv) {
          EXPECT_DOUBLE_EQ(op.fwd_flops, op.gemm.flops()) << preset << " " << op.name;
          EXPECT_DOUBLE_EQ(op.bwd_flops, 2 * op.fwd_flops) << preset << " " << op.name;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// FLOPs against Megatron-LM's formula

// Narayanan et al. 2021, section 5.1, count GEMMs only. Their equation,
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), assumes activation recomputation (four passes over
// each layer, three over the logits). Without recomputation the layers take three passes:
// 72 B s l h^2 (1 + s/(6h)) + 6 B s h V = 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
double megatron_flops(const ModelSpec& spec, double batch, double seq) {
  const double l = spec.layers;
  const double h = static_cast<double>(spec.hidden);
  const double v = static_cast<double>(spec.vocab);
  return 72 * batch * seq * l * h * h * (1 + seq / (6 * h) + v / (12 * l * h));
}

TEST(WorkloadTest, GptGemmFlopsMatchMegatronFormula) {
  for (const char* preset : {"gpt3-1.3b", "gpt3-175b", "mt-nlg-530b"}) {
    for (int64_t batch : {1, 4}) {
      const Workload w = build(preset, batch);
      const double expected =
          megatron_flops(w.spec, static_cast<double>(batch), static_cast<double>(w.shape.seq_len));
      EXPECT_NEAR(gemm_flops(w) / expected, 1.0, 1e-9) << preset << " b=" << batch;
      // The memory-bound ops add a little on top.
      const double total = model_flops_per_iteration(w, batch);
      EXPECT_GT(total, expected) << preset;
      EXPECT_LT(total / expected, 1.01) << preset;
    }
  }
}

// 6 N FLOPs per token (Kaplan et al. 2020) for GPT-3 175B at s = 2048: the GEMMs give
// 72 l h^2 (1 + s/(6h)) + 6 h V = 1.0727e12 + 3.8e9 = 1.0765e12 per token against
// 6 N = 1.0476e12, 2.8% more: attention's QK^T and AV add s/(6h) = 2.8%, while the position
// and token embeddings (in N but no GEMM) roughly offset the tied LM head's 6hV.
TEST(WorkloadTest, SixNFlopsPerToken) {
  const Workload w = build("gpt3-175b");
  const double per_token = model_flops_per_iteration(w, 1) / static_cast<double>(w.shape.seq_len);
  const double six_n = 6 * static_cast<double>(w.params());
  EXPECT_GT(per_token / six_n, 1.02);
  EXPECT_LT(per_token / six_n, 1.04);
}

TEST(WorkloadTest, ModelFlopsScaleWithSamples) {
  const Workload w = build("llama3-8b", 2, 1024);
  EXPECT_DOUBLE_EQ(model_flops_per_iteration(w, 64), 32 * (w.fwd_flops() + w.bwd_flops()));
}

// ---------------------------------------------------------------------------------------
// Activations against Korthikanti et al. 2022

// Section 4.1: a GPT layer in 16-bit keeps s b h (34 + 5 a s / h) bytes; with tensor
// parallelism t and no sequence parallelism, s b h (10 + 24/t + 5 a s/(h t)).
TEST(WorkloadTest, GptActivationsMatchKorthikanti) {
  for (const char* preset : {"gpt-22b", "gpt3-175b"}) {
    const int64_t b = 2;
    const Workload w = build(preset, b);
    const double s = static_cast<double>(w.shape.seq_len);
    const double h = static_cast<double>(w.spec.hidden);
    const double a = w.spec.heads;
    const double sbh = s * static_cast<double>(b) * h;
    const double s2 = 5 * a * s * s * static_cast<double>(b);
    const SavedBytes saved = saved_bytes(layer_named(w, "block.3"));
    EXPECT_DOUBLE_EQ(saved.sequence, 10 * sbh) << preset;
    EXPECT_DOUBLE_EQ(saved.split, 24 * sbh + s2) << preset;
    EXPECT_DOUBLE_EQ(saved.replicated, 0) << preset;
    EXPECT_DOUBLE_EQ(saved.core, s2) << preset;
    EXPECT_DOUBLE_EQ(saved.total() - saved.core, 34 * sbh) << preset;
    for (int t : {1, 2, 8}) {
      EXPECT_NEAR(saved.sequence + saved.split / t, sbh * (10 + 24.0 / t + 5 * a * s / (h * t)),
                  1e-6 * sbh)
          << preset << " t=" << t;
    }
  }
}

// In fp32 every 2-byte term doubles and the dropout masks stay at one byte: 18 s b h kept
// whole, 48 s b h split, and 9 a s^2 b in the attention core.
TEST(WorkloadTest, GptActivationsInFp32) {
  const int64_t b = 1;
  const Workload w = build("gpt3-1.3b", b, 0, Precision::kFp32);
  const double s = static_cast<double>(w.shape.seq_len);
  const double sbh = s * static_cast<double>(b) * static_cast<double>(w.spec.hidden);
  const SavedBytes saved = saved_bytes(layer_named(w, "block.0"));
  EXPECT_DOUBLE_EQ(saved.sequence, 18 * sbh);
  EXPECT_DOUBLE_EQ(saved.core, 9.0 * w.spec.heads * s * s * static_cast<double>(b));
  EXPECT_DOUBLE_EQ(saved.split - saved.core, 48 * sbh);
}

TEST(WorkloadTest, OnlyTheAttentionCoreIsMarked) {
  for (const char* preset : {"gpt3-1.3b", "llama3-8b", "mixtral-8x7b", "bert-large"}) {
    const Workload w = build(preset, 1, 1024);
    for (const Layer& layer : w.layers) {
      for (const Op& op : layer.ops) {
        const bool core_name = op.name == "attn.score" || op.name == "attn.softmax" ||
                               op.name == "attn.dropout" || op.name == "attn.context" ||
                               op.name == "attn.flash";
        EXPECT_EQ(op.attention_core, core_name) << preset << " " << layer.name << " " << op.name;
      }
    }
  }
}

// FlashAttention: one fused op in place of the score GEMM, softmax, dropout and context
// GEMM, with their GEMM FLOPs, a 2.5x backward, traffic and saved state linear in s, and
// causal models running (n + 1) / 2n of the 128-wide tiles.
TEST(WorkloadTest, FlashAttentionFusesTheCore) {
  const ModelSpec spec = preset_spec("gpt3-1.3b");
  const Workload unfused = build_workload(spec, WorkloadShape{2, 2048, Precision::kBf16, false});
  const Workload flash = build_workload(spec, WorkloadShape{2, 2048, Precision::kBf16, true});
  const Layer& u = layer_named(unfused, "block.0");
  const Layer& f = layer_named(flash, "block.0");
  for (const char* gone : {"attn.score", "attn.softmax", "attn.dropout", "attn.context"}) {
    EXPECT_THROW(op_named(f, gone), std::runtime_error) << gone;
  }
  const Op& fa = op_named(f, "attn.flash");
  EXPECT_EQ(fa.kind, OpKind::kAttention);
  EXPECT_TRUE(fa.attention_core);
  EXPECT_DOUBLE_EQ(fa.fwd_flops, op_named(u, "attn.score").fwd_flops + op_named(u, "attn.context").fwd_flops);
  EXPECT_DOUBLE_EQ(fa.bwd_flops, 2.5 * fa.fwd_flops);
  EXPECT_DOUBLE_EQ(fa.executed_fraction, 17.0 / 32.0);  // 16 tiles of 128 per side
  // Q, K, V, O of 2 x 2048 tokens per head, bf16, and an fp32 log-sum-exp per row and head.
  const double rows = 2.0 * static_cast<double>(spec.heads) * 2048;
  EXPECT_DOUBLE_EQ(fa.fwd_bytes, 4 * rows * static_cast<double>(spec.head_dim()) * 2 + rows * 4);
  EXPECT_DOUBLE_EQ(fa.saved_bytes, rows * 4);
  // Everything outside the core is the same; the layer keeps no s x s tensor.
  EXPECT_EQ(f.ops.size(), u.ops.size() - 3);
  double saved_u = 0, saved_f = 0;
  for (const Op& op : u.ops) saved_u += op.saved_bytes;
  for (const Op& op : f.ops) saved_f += op.saved_bytes;
  const double scores = 2.0 * static_cast<double>(spec.heads) * 2048 * 2048;
  EXPECT_GT(saved_u - saved_f, scores * 2);  // at least the softmax output in bf16
  EXPECT_LT(saved_f, 40.0 * 2 * 2048 * 2048);  // ~34 s b h bytes
  // The model's FLOPs count (MFU) keeps the full attention; only the softmax's and
  // dropout's elementwise FLOPs (0.2% here) are not counted in the fused kernel.
  EXPECT_NEAR(flash.fwd_flops(), unfused.fwd_flops(), 3e-3 * unfused.fwd_flops());
  // BERT attends both ways: every tile runs.
  ModelSpec bert = preset_spec("bert-large");
  const Workload b = build_workload(bert, WorkloadShape{1, 512, Precision::kBf16, true});
  EXPECT_DOUBLE_EQ(op_named(layer_named(b, "block.0"), "attn.flash").executed_fraction, 1.0);
}

// A sliding window of 4096 tokens over 8192: 64 rows of tiles, each running at most the
// 33 the window touches (32 + 1 partly covered): 1 + 2 + ... + 33 and 31 rows of 33, 1,584
// of 4,096 tiles, against 65 / 128 without the window. A window as long as the sequence
// changes nothing; the model's FLOPs (MFU's count) stay those of full attention.
TEST(WorkloadTest, SlidingWindowRunsTheBandOfTiles) {
  ModelSpec spec = preset_spec("llama3-8b");
  spec.layers = 1;
  const auto fraction = [&](int64_t window) {
    spec.sliding_window = window;
    const Workload w = build_workload(spec, WorkloadShape{1, 8192, Precision::kBf16, true});
    return op_named(layer_named(w, "block.0"), "attn.flash").executed_fraction;
  };
  EXPECT_DOUBLE_EQ(fraction(0), 65.0 / 128.0);
  EXPECT_DOUBLE_EQ(fraction(4096), 1584.0 / 4096.0);
  EXPECT_DOUBLE_EQ(fraction(8192), 65.0 / 128.0);
  spec.sliding_window = 4096;
  const Workload windowed = build_workload(spec, WorkloadShape{1, 8192, Precision::kBf16, true});
  spec.sliding_window = 0;
  const Workload full = build_workload(spec, WorkloadShape{1, 8192, Precision::kBf16, true});
  EXPECT_DOUBLE_EQ(windowed.fwd_flops(), full.fwd_flops());
}

// LLaMA has no dropout: the attention core keeps only the softmax output (2 a s^2 b), which
// attention over V reads; the rest is 4sbh of norm inputs, 2sbh QKV input, Q, K, V
// 2sb(h + 2g), 2sbh projection input, 2sbh gate/up input, 4sbf gate and up outputs and
// 2sbf down input (g = kv_heads * head_dim = h / 4 for Llama 3 8B, f = ffn).
TEST(WorkloadTest, LlamaActivations) {
  const int64_t b = 1;
  const Workload w = build("llama3-8b", b, 4096);
  const double s = 4096;
  const double h = 4096;
  const double f = 14336;
  const double sb = s * static_cast<double>(b);
  const SavedBytes saved = saved_bytes(layer_named(w, "block.0"));
  EXPECT_DOUBLE_EQ(saved.core, 2.0 * 32 * s * s * static_cast<double>(b));
  EXPECT_DOUBLE_EQ(saved.total() - saved.core, sb * (13 * h + 6 * f));
  for (const Op& op : layer_named(w, "block.0").ops) {
    EXPECT_EQ(op.name.find("dropout"), std::string::npos) << op.name;
  }
}

// ---------------------------------------------------------------------------------------
// Shapes, communication and MoE

TEST(WorkloadTest, GroupedQueryAttentionShapes) {
  const Workload w = build("llama3-8b", 2, 1024);
  const Layer& block = layer_named(w, "block.0");
  const GemmShape qkv = op_named(block, "attn.qkv").gemm;
  EXPECT_EQ(qkv.m, 2048);
  EXPECT_EQ(qkv.n, 4096 + 2 * 8 * 128);
  EXPECT_EQ(qkv.k, 4096);
  EXPECT_EQ(op_named(block, "attn.qkv").split, TensorSplit::kColumn);
  const GemmShape score = op_named(block, "attn.score").gemm;
  EXPECT_EQ(score.batch, 2 * 32);
  EXPECT_EQ(score.m, 1024);
  EXPECT_EQ(score.n, 1024);
  EXPECT_EQ(score.k, 128);
  const GemmShape context = op_named(block, "attn.context").gemm;
  EXPECT_EQ(context.m, 1024);
  EXPECT_EQ(context.n, 128);
  EXPECT_EQ(context.k, 1024);
  EXPECT_EQ(op_named(block, "attn.proj").split, TensorSplit::kRow);
  EXPECT_EQ(op_named(block, "mlp.gate").gemm.n, 14336);
  EXPECT_EQ(op_named(block, "mlp.up").split, TensorSplit::kColumn);
  EXPECT_EQ(op_named(block, "mlp.down").gemm.k, 14336);
  EXPECT_EQ(op_named(block, "mlp.down").split, TensorSplit::kRow);
  EXPECT_DOUBLE_EQ(block.kv_bytes, 2048.0 * 2 * 8 * 128 * 2);
  // Nemotron-4 is a gpt-family model with 8 KV heads: its QKV honours them.
  const Workload nemotron = build("nemotron4-340b", 1, 128);
  EXPECT_EQ(op_named(layer_named(nemotron, "block.0"), "attn.qkv").gemm.n, 18432 + 2 * 8 * 192);
}

TEST(WorkloadTest, TensorParallelCommunication) {
  const int64_t b = 2;
  const Workload w = build("gpt3-1.3b", b);
  const double hidden_bytes = 2.0 * 2048 * 2048 * 2;  // b s h, 2 bytes
  const Layer& embedding = layer_named(w, "embedding");
  EXPECT_EQ(embedding.tp_comms_fwd(), 1);
  EXPECT_EQ(embedding.tp_comms_bwd(), 0);
  EXPECT_DOUBLE_EQ(embedding.tp_comm_bytes, hidden_bytes);
  const Layer& block = layer_named(w, "block.5");
  EXPECT_EQ(block.tp_comms_fwd(), 2);
  EXPECT_EQ(block.tp_comms_bwd(), 2);
  EXPECT_DOUBLE_EQ(block.tp_comm_bytes, hidden_bytes);
  EXPECT_DOUBLE_EQ(block.output_bytes, hidden_bytes);
  EXPECT_DOUBLE_EQ(block.moe_all_to_all_bytes, 0);
  // Forward: after the projection and after fc2; backward: after the QKV and fc1 gradients;
  // keys and values are gathered (context parallelism) before the attention core.
  const auto index = [&](const Layer& l, const std::string& name) {
    return static_cast<int>(&op_named(l, name) - l.ops.data());
  };
  EXPECT_EQ(block.tp_fwd_at,
            (std::vector<int>{index(block, "attn.proj") + 1, index(block, "mlp.fc2") + 1}));
  EXPECT_EQ(block.tp_bwd_at, (std::vector<int>{index(block, "attn.qkv"), index(block, "mlp.fc1")}));
  EXPECT_EQ(block.cp_at, index(block, "attn.score"));
  EXPECT_TRUE(block.ep_at.empty());
  EXPECT_EQ(embedding.tp_fwd_at, std::vector<int>{1});
  const Layer& head = layer_named(w, "head");
  EXPECT_EQ(head.tp_comms_fwd(), 0);
  EXPECT_EQ(head.tp_comms_bwd(), 1);
  EXPECT_DOUBLE_EQ(head.tp_comm_bytes, hidden_bytes);
  EXPECT_EQ(head.tp_bwd_at, std::vector<int>{index(head, "head.logits")});
  for (const Layer& layer : build("resnet50").layers) {
    EXPECT_EQ(layer.tp_comms_fwd() + layer.tp_comms_bwd(), 0) << layer.name;
  }
  for (const Layer& layer : build("mlp-mnist").layers) {
    EXPECT_EQ(layer.tp_comms_fwd() + layer.tp_comms_bwd(), 0) << layer.name;
  }
}

TEST(WorkloadTest, MixtralExperts) {
  const int64_t b = 1;
  const int64_t s = 4096;
  const Workload w = build("mixtral-8x7b", b, s);
  const Layer& block = layer_named(w, "block.0");
  const double h = 4096;
  const double f = 14336;
  const double routed = static_cast<double>(b * s) * 2;  // top 2
  const Op& router = op_named(block, "moe.router");
  EXPECT_EQ(router.kind, OpKind::kRouter);
  EXPECT_EQ(router.gemm.n, 8);
  EXPECT_EQ(router.params, 4096 * 8);
  double expert_flops = 0;
  int64_t expert_params = 0;
  int grouped = 0;
  for (const Op& op : block.ops) {
    EXPECT_EQ(op.expert, op.name.rfind("moe.expert.", 0) == 0) << op.name;
    if (op.expert && op.kind == OpKind::kMatmul) {
      ++grouped;
      expert_flops += op.fwd_flops;
      expert_params += op.params;
      // One grouped GEMM over the 8 experts, each group the mean rows: 8,192 / 8.
      EXPECT_EQ(op.kernel, KernelKind::kGroupedGemm) << op.name;
      EXPECT_EQ(op.gemm.batch, 8) << op.name;
      EXPECT_EQ(op.gemm.m, b * s * 2 / 8) << op.name;
    }
  }
  // fc1 (gate and up, 2f wide) and fc2: two grouped GEMMs a pass.
  EXPECT_EQ(grouped, 2);
  EXPECT_EQ(op_named(block, "moe.expert.fc1").gemm.n, 2 * 14336);
  EXPECT_DOUBLE_EQ(expert_flops, 3 * 2 * routed * h * f);
  EXPECT_EQ(expert_params, int64_t{8} * 3 * 4096 * 14336);
  EXPECT_DOUBLE_EQ(block.moe_all_to_all_bytes, routed * h * 2);
  // The tokens are permuted into expert order and back, each a gather of every routed row.
  EXPECT_EQ(op_named(block, "moe.permute").kernel, KernelKind::kPermute);
  EXPECT_DOUBLE_EQ(op_named(block, "moe.permute").fwd_bytes, 2 * routed * h * 2);
  EXPECT_EQ(op_named(block, "moe.unpermute").kernel, KernelKind::kPermute);
  // Dispatch once permuted, the combine's all-to-all before the unpermute.
  const auto at = [&](const std::string& name) {
    return static_cast<int>(&op_named(block, name) - block.ops.data());
  };
  EXPECT_EQ(block.ep_at, (std::vector<int>{at("moe.expert.fc1"), at("moe.unpermute")}));
  // Mixtral is MoE on LLaMA's attention: GQA with 8 KV heads.
  EXPECT_EQ(op_named(block, "attn.qkv").gemm.n, 4096 + 2 * 1024);
}

TEST(WorkloadTest, BertHeads) {
  const Workload w = build("bert-large", 4);
  const Layer& head = layer_named(w, "head");
  EXPECT_EQ(op_named(head, "head.mlm.logits").split, TensorSplit::kVocab);
  EXPECT_EQ(op_named(head, "head.mlm.logits").params, 30522);  // tied weights, own bias
  EXPECT_EQ(op_named(head, "head.pooler").gemm.m, 4);
  EXPECT_EQ(op_named(head, "head.nsp").gemm.n, 2);
  // Post-LN: the block normalises after each residual.
  const Layer& block = layer_named(w, "block.0");
  EXPECT_EQ(block.ops.front().name, "attn.qkv");
  EXPECT_EQ(block.ops.back().name, "mlp.norm");
  EXPECT_DOUBLE_EQ(saved_bytes(block).total() - saved_bytes(block).core, 34.0 * 4 * 512 * 1024);
}

// ---------------------------------------------------------------------------------------
// Vision, MLP and the large classifier

// He et al. 2016 report 3.8 GFLOPs (multiply-adds) for ResNet-50 v1; torchvision's v1.5
// counts 4.09 GMACs; Krizhevsky's AlexNet about 0.72; VGG-16 15.5.
TEST(WorkloadTest, VisionMultiplyAccumulates) {
  const double resnet = macs_per_sample(build("resnet50", 8));
  EXPECT_GT(resnet, 3.8e9);
  EXPECT_LT(resnet, 4.2e9);
  EXPECT_NEAR(macs_per_sample(build("alexnet", 8)) / 0.714e9, 1.0, 0.01);
  EXPECT_NEAR(macs_per_sample(build("vgg16", 8)) / 15.47e9, 1.0, 0.01);
}

TEST(WorkloadTest, ResNet50Structure) {
  const Workload w = build("resnet50", 32);
  ASSERT_EQ(w.layers.size(), 1u + 16u + 1u);
  EXPECT_EQ(w.layers.front().name, "stem");
  EXPECT_EQ(w.layers[1].name, "conv2_x.0");
  EXPECT_EQ(w.layers[5].name, "conv3_x.1");
  EXPECT_EQ(w.layers.back().name, "head");
  for (const Layer& layer : w.layers) EXPECT_EQ(layer.kind, LayerKind::kVision);
  // conv2_x.0 outputs 256 channels at 56 x 56; the stem 64 at 56 x 56.
  EXPECT_DOUBLE_EQ(w.layers[1].output_bytes, 32.0 * 256 * 56 * 56 * 2);
  EXPECT_DOUBLE_EQ(w.layers[0].output_bytes, 32.0 * 64 * 56 * 56 * 2);
  const Op& conv1 = op_named(w.layers[0], "conv1");
  EXPECT_EQ(conv1.kind, OpKind::kConv);
  EXPECT_EQ(conv1.gemm.m, 32 * 112 * 112);
  EXPECT_EQ(conv1.gemm.n, 64);
  EXPECT_EQ(conv1.gemm.k, 3 * 7 * 7);
}

TEST(WorkloadTest, ClassifierWithHundredMillionClasses) {
  const int64_t b = 16;
  const Workload w = build("classifier-100m", b);
  const Layer& classifier = w.layers.back();
  EXPECT_EQ(classifier.kind, LayerKind::kClassifier);
  EXPECT_EQ(classifier.params(), int64_t{2048} * 100'000'000 + 100'000'000);
  EXPECT_EQ(op_named(classifier, "fc").split, TensorSplit::kVocab);
  EXPECT_EQ(op_named(classifier, "fc").gemm.n, 100'000'000);
  EXPECT_EQ(op_named(classifier, "loss").split, TensorSplit::kVocab);
  EXPECT_EQ(op_named(classifier, "loss").kind, OpKind::kLoss);
  // The backbone is ResNet-50 without its 1000-class fc.
  const int64_t resnet = build("resnet50").params();
  EXPECT_EQ(w.params() - classifier.params(), resnet - (2048 * 1000 + 1000));
  EXPECT_EQ(w.layers[w.layers.size() - 2].name, "pool");

  // The classifier's FLOPs are linear in the number of classes.
  ModelSpec half = preset_spec("classifier-100m");
  half.classes = 50'000'000;
  const Workload w_half = build_workload(half, WorkloadShape{b, 0, Precision::kBf16});
  const Layer& classifier_half = w_half.layers.back();
  EXPECT_DOUBLE_EQ(classifier.fwd_flops() + classifier.bwd_flops(),
                   2 * (classifier_half.fwd_flops() + classifier_half.bwd_flops()));
  EXPECT_DOUBLE_EQ(op_named(classifier, "fc").fwd_flops, 2.0 * b * 2048 * 100'000'000);
}

TEST(WorkloadTest, ClassifierOnMlpBackbone) {
  ModelSpec spec = preset_spec("mlp-mnist");
  spec.family = ModelFamily::kClassifier;
  spec.backbone = "mlp";
  spec.classes = 1'000'000;
  const Workload w = build_workload(spec, WorkloadShape{64, 0, Precision::kBf16});
  ASSERT_EQ(w.layers.size(), 3u);
  EXPECT_EQ(w.layers[0].name, "fc.0");
  EXPECT_EQ(w.layers[1].name, "fc.1");
  EXPECT_EQ(w.layers[2].kind, LayerKind::kClassifier);
  EXPECT_EQ(w.layers[2].params(), 800 * 1'000'000 + 1'000'000);
}

}  // namespace
}  // namespace dtsim::models
