// Model families, the preset zoo (published dimensions, sources in each description) and
// the checks a model description must pass before a workload is built from it.
#include "models/model_spec.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "models/name_table.h"
#include "models/zoo/zoo.h"

namespace dtsim::models {
namespace {

constexpr std::pair<ModelFamily, std::string_view> kFamilyNames[] = {
    {ModelFamily::kGpt, "gpt"},           {ModelFamily::kLlama, "llama"},
    {ModelFamily::kMoe, "moe"},           {ModelFamily::kBert, "bert"},
    {ModelFamily::kResnet50, "resnet50"}, {ModelFamily::kResnet, "resnet"},
    {ModelFamily::kAlexnet, "alexnet"},   {ModelFamily::kVgg16, "vgg16"},
    {ModelFamily::kMlp, "mlp"},           {ModelFamily::kClassifier, "classifier"}};

// The classifier family goes up to 1e8 classes (Song et al., KDD 2020); so may the others.
constexpr int64_t kMaxClasses = 100'000'000;
// Bounds on the other dimensions (check_bounds): 50x the deepest and ~20x the widest
// models of the zoo, a 16M-token sequence, 4,096 experts.
constexpr int64_t kMaxLayers = 10'000;
constexpr int64_t kMaxWidth = 1 << 20;
constexpr int64_t kMaxExperts = 4096;
// Within each bound, a model's parameters can still multiply past 64 bits (10,000 layers
// of 2^20 heads of 2^20): the count, estimated in floating point, is bounded too.
constexpr double kMaxParameters = 1e15;
constexpr int64_t kMaxImageSize = 16384;
// A resnet's convolution strides and stem kernel: beyond these a value is a typo.
constexpr int kMaxStride = 16;
constexpr int kMaxKernel = 31;

constexpr std::pair<ResnetBlock, std::string_view> kResnetBlockNames[] = {
    {ResnetBlock::kBasic, "basic"}, {ResnetBlock::kBottleneck, "bottleneck"}};

// Megatron-LM pads GPT-2's 50257-token vocabulary to a multiple of 128 times the
// tensor-parallel size; Narayanan et al. 2021 use the padded 51200 (TP 8).
constexpr int64_t kMegatronGptVocab = 51200;

ModelPreset preset(std::string_view name, std::string_view description, ModelSpec spec) {
  spec.name = std::string(name);
  return ModelPreset{name, description, std::move(spec)};
}

ModelSpec transformer(ModelFamily family, int layers, int64_t hidden, int heads, int64_t vocab,
                      int64_t seq_len) {
  ModelSpec spec;
  spec.family = family;
  spec.layers = layers;
  spec.hidden = hidden;
  spec.heads = heads;
  spec.vocab = vocab;
  spec.seq_len = seq_len;
  return spec;
}

// GPT-style decoders as Megatron-LM trains them: ffn 4h, tied embeddings, 2048 tokens.
ModelSpec megatron_gpt(int layers, int64_t hidden, int heads) {
  ModelSpec spec = transformer(ModelFamily::kGpt, layers, hidden, heads, kMegatronGptVocab, 2048);
  spec.tied_embeddings = true;
  return spec;
}

ModelSpec gpt2_small() {
  ModelSpec spec = transformer(ModelFamily::kGpt, 12, 768, 12, 50257, 1024);
  spec.tied_embeddings = true;
  return spec;
}

ModelSpec nemotron4_340b() {
  ModelSpec spec = transformer(ModelFamily::kGpt, 96, 18432, 96, 256000, 4096);
  spec.kv_heads = 8;
  spec.ffn_hidden = 73728;
  return spec;
}

// Llama 3: 8 KV heads, the 128256-token vocabulary, 8192-token pre-training sequences.
ModelSpec llama3(int layers, int64_t hidden, int heads, int64_t ffn) {
  ModelSpec spec = transformer(ModelFamily::kLlama, layers, hidden, heads, 128256, 8192);
  spec.kv_heads = 8;
  spec.ffn_hidden = ffn;
  return spec;
}

ModelSpec mixtral_8x7b() {
  ModelSpec spec = transformer(ModelFamily::kMoe, 32, 4096, 32, 32000, 4096);
  spec.kv_heads = 8;
  spec.ffn_hidden = 14336;
  spec.experts = 8;
  spec.top_k = 2;
  return spec;
}

// BERT: ffn 4h, WordPiece vocabulary of 30522, 512 positions, MLM decoder tied.
ModelSpec bert(int layers, int64_t hidden, int heads) {
  ModelSpec spec = transformer(ModelFamily::kBert, layers, hidden, heads, 30522, 512);
  spec.tied_embeddings = true;
  return spec;
}

// 224x224 ImageNet images, 1000 classes.
ModelSpec image_model(ModelFamily family) {
  ModelSpec spec;
  spec.family = family;
  spec.image_size = 224;
  spec.classes = 1000;
  return spec;
}

ModelSpec mlp_mnist() {
  ModelSpec spec;
  spec.family = ModelFamily::kMlp;
  spec.layers = 2;
  spec.hidden = 800;
  spec.input_features = 784;  // 28 x 28 pixels
  spec.classes = 10;
  return spec;
}

ModelSpec classifier_100m() {
  ModelSpec spec = image_model(ModelFamily::kClassifier);
  spec.backbone = "resnet50";
  spec.hidden = 2048;
  spec.classes = kMaxClasses;
  return spec;
}

std::vector<ModelPreset> make_presets() {
  std::vector<ModelPreset> p;
  p.push_back(
      preset("gpt2", "GPT-2 small, 124M (Radford et al. 2019; Hugging Face gpt2)", gpt2_small()));
  p.push_back(preset("gpt3-1.3b",
                     "GPT-3 XL 1.3B (Brown et al. 2020, Table 2.1); vocabulary padded to 51200 "
                     "as Megatron-LM does",
                     megatron_gpt(24, 2048, 16)));
  p.push_back(preset("gpt3-13b",
                     "GPT-3 13B (Brown et al. 2020, Table 2.1: 40 layers, 40 heads of 128; the "
                     "table's d_model 5140 is read as 40 x 128 = 5120, as implementations "
                     "do); vocabulary padded to 51200",
                     megatron_gpt(40, 5120, 40)));
  p.push_back(preset("gpt3-175b",
                     "GPT-3 175B (Brown et al. 2020; Narayanan et al. 2021, Table 1: 174.6B "
                     "with the vocabulary padded to 51200)",
                     megatron_gpt(96, 12288, 96)));
  p.push_back(preset("gpt-22b", "Megatron GPT 22B (Korthikanti et al. 2022, Table 3)",
                     megatron_gpt(48, 6144, 64)));
  p.push_back(preset("mt-nlg-530b",
                     "Megatron-Turing NLG 530B (Smith et al. 2022; Narayanan et al. 2021, "
                     "Table 1: 529.6B)",
                     megatron_gpt(105, 20480, 128)));
  p.push_back(preset("gpt-1t", "Megatron GPT 1T (Narayanan et al. 2021, Table 1: 1008B)",
                     megatron_gpt(128, 25600, 160)));
  p.push_back(
      preset("nemotron4-340b",
             "Nemotron-4 340B (NVIDIA 2024, Table 1): squared-ReLU MLP without a gate, modelled as "
             "the gpt family (LayerNorm, biases, dropout, learned positions in place of "
             "rotary ones) with ffn 73728 and 8 KV heads; untied embeddings",
             nemotron4_340b()));
  p.push_back(preset("llama3-8b",
                     "Llama 3 8B (Llama Team 2024, The Llama 3 Herd of Models, Table 3)",
                     llama3(32, 4096, 32, 14336)));
  p.push_back(
      preset("llama3-70b", "Llama 3 70B (Llama Team 2024, Table 3)", llama3(80, 8192, 64, 28672)));
  p.push_back(preset("llama3.1-405b", "Llama 3.1 405B (Llama Team 2024, Table 3)",
                     llama3(126, 16384, 128, 53248)));
  p.push_back(
      preset("mixtral-8x7b",
             "Mixtral 8x7B (Jiang et al. 2024, Table 1: 8 experts, top 2); 4096-token sequences as "
             "in Megatron-Core's Mixtral recipes (the model's context is 32768)",
             mixtral_8x7b()));
  p.push_back(preset("bert-base", "BERT-Base, 110M (Devlin et al. 2019)", bert(12, 768, 12)));
  p.push_back(preset("bert-large", "BERT-Large, 340M (Devlin et al. 2019)", bert(24, 1024, 16)));
  p.push_back(preset("resnet50",
                     "ResNet-50 v1.5 on 224x224 ImageNet, 25.6M parameters, 4.1 GMACs (He et "
                     "al. 2016; torchvision)",
                     image_model(ModelFamily::kResnet50)));
  p.push_back(preset("alexnet",
                     "AlexNet, one-tower variant (Krizhevsky 2014; torchvision), 61.1M "
                     "parameters, 0.71 GMACs",
                     image_model(ModelFamily::kAlexnet)));
  p.push_back(preset("vgg16",
                     "VGG-16, configuration D (Simonyan and Zisserman 2015), 138.4M "
                     "parameters, 15.5 GMACs",
                     image_model(ModelFamily::kVgg16)));
  p.push_back(preset("mlp-mnist",
                     "MNIST MLP 784-800-800-10 (the two-layer, 800-unit net of Simard et al. "
                     "2003, as in Srivastava et al. 2014, Table 2)",
                     mlp_mnist()));
  p.push_back(preset("classifier-100m",
                     "100-million-class image classifier: ResNet-50 backbone (2048 features) "
                     "and a class-parallel fully connected layer (Song et al., KDD 2020)",
                     classifier_100m()));
  return p;
}

const std::vector<ModelPreset>& presets() {
  static const std::vector<ModelPreset> all = make_presets();
  return all;
}

class Problems {
 public:
  void add(std::string problem) { list_.push_back(std::move(problem)); }
  void require_positive(std::string_view field, int64_t value) {
    if (value <= 0) add(std::string(field) + ": must be positive, got " + std::to_string(value));
  }
  void require_zero_or_positive(std::string_view field, int64_t value, std::string_view zero) {
    if (value < 0) {
      add(std::string(field) + ": must be 0 (" + std::string(zero) + ") or positive, got " +
          std::to_string(value));
    }
  }
  void require_between(std::string_view field, int64_t value, int64_t low, int64_t high) {
    if (value < low || value > high) {
      add(std::string(field) + ": must be between " + std::to_string(low) + " and " +
          std::to_string(high) + ", got " + std::to_string(value));
    }
  }
  size_t size() const { return list_.size(); }
  std::vector<std::string> take() { return std::move(list_); }

 private:
  std::vector<std::string> list_;
};

void check_attention(const ModelSpec& spec, Problems& problems) {
  problems.require_positive("heads", spec.heads);
  problems.require_zero_or_positive("head_dim", spec.explicit_head_dim, "= hidden / heads");
  if (!spec.mla() && spec.explicit_head_dim == 0 && spec.hidden > 0 && spec.heads > 0 &&
      spec.hidden % spec.heads != 0) {
    problems.add("hidden: must be divisible by heads (hidden " + std::to_string(spec.hidden) +
                 ", heads " + std::to_string(spec.heads) + "), or give head_dim");
  }
  problems.require_zero_or_positive("kv_heads", spec.kv_heads, "= heads");
  if (spec.kv_heads > 0 && spec.heads > 0 && spec.heads % spec.kv_heads != 0) {
    problems.add("kv_heads: must divide heads (heads " + std::to_string(spec.heads) +
                 ", kv_heads " + std::to_string(spec.kv_heads) + ")");
  }
}

// Multi-head latent attention's dimensions (ModelSpec::mla).
void check_latent_attention(const ModelSpec& spec, Problems& problems) {
  const bool any = spec.q_lora_rank != 0 || spec.kv_lora_rank != 0 || spec.qk_nope_head_dim != 0 ||
                   spec.qk_rope_head_dim != 0 || spec.v_head_dim != 0;
  if (!any) return;
  if (spec.family != ModelFamily::kLlama && spec.family != ModelFamily::kMoe) {
    problems.add(
        "kv_lora_rank: multi-head latent attention is modelled for the llama and moe "
        "families, got " +
        std::string(model_family_name(spec.family)));
    return;
  }
  problems.require_positive("kv_lora_rank", spec.kv_lora_rank);
  problems.require_zero_or_positive("q_lora_rank", spec.q_lora_rank,
                                    "queries projected from the hidden state");
  problems.require_positive("qk_nope_head_dim", spec.qk_nope_head_dim);
  problems.require_positive("qk_rope_head_dim", spec.qk_rope_head_dim);
  problems.require_positive("v_head_dim", spec.v_head_dim);
  if (spec.kv_heads != 0 && spec.kv_heads != spec.heads) {
    problems.add(
        "kv_heads: latent attention expands keys and values for every head; give "
        "no kv_heads (or heads), got " +
        std::to_string(spec.kv_heads));
  }
  if (spec.attention_sinks) {
    problems.add("attention_sinks: not modelled with latent attention");
  }
  if (spec.explicit_head_dim != 0 || spec.qk_norm) {
    problems.add(std::string(spec.qk_norm ? "qk_norm" : "head_dim") +
                 ": latent attention's heads are qk_nope_head_dim + qk_rope_head_dim wide "
                 "(v_head_dim for V), and its norms are on the latents");
  }
}

void check_experts(const ModelSpec& spec, Problems& problems) {
  const std::string family(model_family_name(spec.family));
  if (spec.family != ModelFamily::kMoe) {
    if (spec.experts != 0) {
      problems.add("experts: only the moe family has experts, got " + std::to_string(spec.experts) +
                   " for " + family);
    }
    if (spec.top_k != 0) {
      problems.add("top_k: only the moe family routes to experts, got " +
                   std::to_string(spec.top_k) + " for " + family);
    }
    return;
  }
  problems.require_zero_or_positive("moe_ffn_hidden", spec.moe_ffn_hidden, "= ffn_hidden");
  problems.require_zero_or_positive("shared_ffn_hidden", spec.shared_ffn_hidden,
                                    "no shared experts");
  if (spec.shared_expert_gate && spec.shared_ffn_hidden <= 0) {
    problems.add("shared_expert_gate: gates shared experts, and shared_ffn_hidden gives none");
  }
  problems.require_zero_or_positive("first_dense_layers", spec.first_dense_layers,
                                    "every layer MoE");
  problems.require_positive("moe_layer_period", spec.moe_layer_period);
  if (spec.layers > 0 && spec.moe_layer_period > 0 && spec.first_dense_layers >= 0) {
    bool any = false;
    for (int i = 0; i < spec.layers && !any; ++i) any = spec.is_moe_layer(i);
    if (!any) {
      problems.add("first_dense_layers: leaves no MoE layer among the " +
                   std::to_string(spec.layers) + " (first_dense_layers " +
                   std::to_string(spec.first_dense_layers) + ", moe_layer_period " +
                   std::to_string(spec.moe_layer_period) + ")");
    }
  }
  problems.require_positive("experts", spec.experts);
  problems.require_positive("top_k", spec.top_k);
  if (spec.experts > 0 && spec.top_k > spec.experts) {
    problems.add("top_k: must not exceed experts (top_k " + std::to_string(spec.top_k) +
                 ", experts " + std::to_string(spec.experts) + ")");
  }
}

void check_transformer(const ModelSpec& spec, Problems& problems) {
  problems.require_positive("layers", spec.layers);
  problems.require_positive("hidden", spec.hidden);
  check_attention(spec, problems);
  problems.require_positive("vocab", spec.vocab);
  if (spec.family == ModelFamily::kLlama || spec.family == ModelFamily::kMoe) {
    if (spec.ffn_hidden <= 0) {
      problems.add("ffn_hidden: must be positive for the " +
                   std::string(model_family_name(spec.family)) + " family, got " +
                   std::to_string(spec.ffn_hidden));
    }
  } else {
    problems.require_zero_or_positive("ffn_hidden", spec.ffn_hidden, "= 4 * hidden");
  }
  problems.require_zero_or_positive("seq_len", spec.seq_len, "set by the training set-up");
  problems.require_zero_or_positive("sliding_window", spec.sliding_window, "no window");
  if (!spec.window_pattern.empty() && spec.sliding_window <= 0) {
    problems.add("window_pattern: picks the layers sliding_window applies to, and there is no "
                 "sliding_window");
  }
  if (spec.window_pattern.size() > static_cast<size_t>(std::max(spec.layers, 1))) {
    problems.add("window_pattern: at most one entry a layer (" + std::to_string(spec.layers) +
                 "), got " + std::to_string(spec.window_pattern.size()));
  }
  if (spec.sliding_window > 0 && spec.family == ModelFamily::kBert) {
    problems.add(
        "sliding_window: bert attends in both directions; a sliding window is "
        "modelled for causal decoders");
  }
  check_latent_attention(spec, problems);
  check_experts(spec, problems);
}

void check_classes(const ModelSpec& spec, Problems& problems) {
  if (spec.classes < 1 || spec.classes > kMaxClasses) {
    problems.add("classes: must be between 1 and " + std::to_string(kMaxClasses) + ", got " +
                 std::to_string(spec.classes));
  }
}

// Whether the model is built from spec.stages: the resnet family, or a classifier on one.
bool builds_stages(const ModelSpec& spec) {
  return spec.family == ModelFamily::kResnet ||
         (spec.family == ModelFamily::kClassifier && spec.backbone == "resnet");
}

// A resnet's stem and stages (the resnet family, or a classifier's resnet backbone).
void check_resnet(const ModelSpec& spec, Problems& problems) {
  if (spec.stages.empty()) {
    problems.add("stages: the resnet family is built from a list of stages, and none is given");
  }
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const CnnStage& stage = spec.stages[i];
    const std::string at = "stages/" + std::to_string(i) + "/";
    problems.require_positive(at + "blocks", stage.blocks);
    problems.require_positive(at + "width", stage.width);
    problems.require_between(at + "stride", stage.stride, 1, kMaxStride);
  }
  problems.require_positive("stem/width", spec.stem.width);
  problems.require_between("stem/kernel", spec.stem.kernel, 1, kMaxKernel);
  problems.require_between("stem/stride", spec.stem.stride, 1, kMaxStride);
}

// Whether the feature map's arithmetic can take the stem and stages (check_resnet says
// why not).
bool resnet_shape_valid(const ModelSpec& spec) {
  Problems problems;
  check_resnet(spec, problems);
  return problems.size() == 0;
}

void check_image(const ModelSpec& spec, ModelFamily family, Problems& problems) {
  if (family == ModelFamily::kResnet) check_resnet(spec, problems);
  const int min_size = zoo::min_image_size(family);
  if (spec.image_size < min_size) {
    problems.add("image_size: must be at least " + std::to_string(min_size) + " for " +
                 std::string(model_family_name(family)) + ", got " +
                 std::to_string(spec.image_size));
  }
}

void check_mlp_body(const ModelSpec& spec, Problems& problems) {
  problems.require_positive("layers", spec.layers);
  problems.require_positive("hidden", spec.hidden);
  problems.require_positive("input_features", spec.input_features);
}

std::string sci(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", v);
  return text;
}

void check_classifier(const ModelSpec& spec, Problems& problems) {
  const std::optional<ModelFamily> backbone = model_family_from_name(spec.backbone);
  if (!backbone || !(is_vision(*backbone) || *backbone == ModelFamily::kMlp)) {
    problems.add("backbone: expected resnet50, resnet, alexnet, vgg16 or mlp, got \"" +
                 spec.backbone + "\"");
  } else if (*backbone == ModelFamily::kMlp) {
    check_mlp_body(spec, problems);
  } else {
    const size_t before = problems.size();
    check_image(spec, *backbone, problems);
    const int64_t features =
        problems.size() == before ? zoo::vision_feature_count(spec, *backbone) : 0;
    if (features > 0 && spec.hidden != features) {
      problems.add("hidden: must be " + std::to_string(features) + ", the features of the " +
                   spec.backbone + " backbone, got " + std::to_string(spec.hidden));
    }
  }
  check_classes(spec, problems);
  problems.require_zero_or_positive("embedding", spec.embedding, "the backbone's features");
  if (!(spec.sample_rate > 0 && spec.sample_rate <= 1)) {
    problems.add("sample_rate: must be in (0, 1] (the share of each shard's class centres a step "
                 "samples), got " + sci(spec.sample_rate));
  }
  problems.require_zero_or_positive("knn_candidates", spec.knn_candidates, "the full softmax");
  if (spec.knn_candidates > 0 && spec.sample_rate < 1) {
    problems.add("knn_candidates: KNN softmax and Partial FC's sample_rate are two ways to sample "
                 "the classes; give one");
  }
  if (spec.knn_candidates > spec.classes) {
    problems.add("knn_candidates: must not exceed classes (" + std::to_string(spec.classes) +
                 "), got " + std::to_string(spec.knn_candidates));
  }
}

// Far beyond any model trained so far, and small enough that parameter and FLOP counts
// stay exact in 64 bits and a workload graph fits in memory: beyond them a value is a
// typo. False when one is out of bounds.
bool check_bounds(const ModelSpec& spec, Problems& problems) {
  bool ok = true;
  const auto at_most = [&](std::string_view field, int64_t value, int64_t most) {
    if (value > most) {
      problems.add(std::string(field) + ": must be at most " + std::to_string(most) + ", got " +
                   std::to_string(value));
      ok = false;
    }
  };
  at_most("layers", spec.layers, kMaxLayers);
  at_most("hidden", spec.hidden, kMaxWidth);
  at_most("ffn_hidden", spec.ffn_hidden, 4 * kMaxWidth);
  at_most("head_dim", spec.explicit_head_dim, kMaxWidth);
  at_most("heads", spec.heads, kMaxWidth);
  at_most("kv_heads", spec.kv_heads, kMaxWidth);
  at_most("vocab", spec.vocab, kMaxClasses);
  at_most("experts", spec.experts, kMaxExperts);
  at_most("top_k", spec.top_k, kMaxExperts);
  at_most("moe_ffn_hidden", spec.moe_ffn_hidden, 4 * kMaxWidth);
  at_most("shared_ffn_hidden", spec.shared_ffn_hidden, 4 * kMaxWidth);
  at_most("first_dense_layers", spec.first_dense_layers, kMaxLayers);
  at_most("moe_layer_period", spec.moe_layer_period, kMaxLayers);
  at_most("seq_len", spec.seq_len, kMaxSequence);
  at_most("sliding_window", spec.sliding_window, kMaxSequence);
  at_most("input_features", spec.input_features, kMaxWidth);
  at_most("embedding", spec.embedding, kMaxWidth);
  at_most("q_lora_rank", spec.q_lora_rank, kMaxWidth);
  at_most("kv_lora_rank", spec.kv_lora_rank, kMaxWidth);
  at_most("qk_nope_head_dim", spec.qk_nope_head_dim, kMaxWidth);
  at_most("qk_rope_head_dim", spec.qk_rope_head_dim, kMaxWidth);
  at_most("v_head_dim", spec.v_head_dim, kMaxWidth);
  at_most("image_size", spec.image_size, kMaxImageSize);
  at_most("stem/width", spec.stem.width, kMaxWidth);
  int64_t blocks = 0;
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const std::string at = "stages/" + std::to_string(i) + "/";
    at_most(at + "blocks", spec.stages[i].blocks, kMaxLayers);
    at_most(at + "width", spec.stages[i].width, kMaxWidth);
    blocks += std::max(spec.stages[i].blocks, 0);
    if (blocks > kMaxLayers) {
      problems.add("stages: at most " + std::to_string(kMaxLayers) + " blocks in all, got " +
                   std::to_string(blocks) + " by stage " + std::to_string(i));
      return false;
    }
  }
  if (!ok) return false;
  if (builds_stages(spec) && resnet_shape_valid(spec)) {
    // Every block's convolutions, generously (a bottleneck's are 17 w^2 with its input, a
    // basic block's 18 w^2 for its own width), and the fc on the features.
    double convs = 0;
    for (const CnnStage& stage : spec.stages) {
      const double w = static_cast<double>(stage.output_channels());
      convs += 18 * w * w * stage.blocks;
    }
    const double features =
        static_cast<double>(zoo::vision_feature_count(spec, ModelFamily::kResnet));
    const double estimate = convs + features * static_cast<double>(spec.classes);
    if (estimate > kMaxParameters) {
      problems.add("the model would have about " + sci(estimate) + " parameters, more than the " +
                   sci(kMaxParameters) + " a model may have (stages' convolutions " + sci(convs) +
                   ", " + sci(features) + " features to " + std::to_string(spec.classes) +
                   " classes)");
      return false;
    }
  }
  // A transformer's parameters, generously: attention, a gated FFN and every expert per
  // layer, and the embedding and head; other families stay far below.
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  const double head_width =
      d(spec.heads) * d(spec.explicit_head_dim > 0 ? spec.explicit_head_dim : spec.hidden);
  const double ffn = d(spec.ffn_hidden > 0 ? spec.ffn_hidden : 4 * spec.hidden);
  const double experts_ffn = d(spec.moe_ffn_hidden > 0 ? spec.moe_ffn_hidden : spec.ffn_hidden) *
                                 d(spec.experts) +
                             d(spec.shared_ffn_hidden);
  // Latent attention's up projections: heads x (nope + rope) and heads x (nope + v) wide.
  const double latent =
      d(spec.heads) * (d(spec.q_lora_rank > 0 ? spec.q_lora_rank : spec.hidden) *
                           d(spec.qk_nope_head_dim + spec.qk_rope_head_dim) +
                       d(spec.kv_lora_rank) * d(spec.qk_nope_head_dim + spec.v_head_dim) +
                       d(spec.v_head_dim) * d(spec.hidden));
  const double per_layer =
      4 * d(spec.hidden) * head_width + latent + 3 * d(spec.hidden) * std::max(ffn, experts_ffn);
  const double estimate = d(spec.layers) * per_layer + 2 * d(spec.vocab) * d(spec.hidden) +
                          d(spec.classes) * d(spec.hidden);
  if (estimate > kMaxParameters) {
    problems.add("the model would have about " + sci(estimate) + " parameters, more than the " +
                 sci(kMaxParameters) + " a model may have (layers " + std::to_string(spec.layers) +
                 ", hidden " + std::to_string(spec.hidden) + ", heads " +
                 std::to_string(spec.heads) + ")");
    return false;
  }
  return true;
}

}  // namespace

int64_t ModelSpec::sampled_classes(int64_t batch) const {
  if (knn_candidates > 0) {
    const double union_bound = static_cast<double>(batch) * static_cast<double>(knn_candidates);
    return union_bound >= static_cast<double>(classes) ? classes : batch * knn_candidates;
  }
  return std::max<int64_t>(1, std::llround(static_cast<double>(classes) * sample_rate));
}

std::vector<std::string_view> model_keys_used(const ModelSpec& spec) {
  static constexpr std::string_view kTransformer[] = {
      "layers", "hidden",  "heads",           "kv_heads",       "head_dim", "qk_norm", "ffn_hidden",
      "vocab",  "seq_len", "tied_embeddings", "sliding_window", "experts",  "top_k",
      "window_pattern", "attention_sinks"};
  static constexpr std::string_view kMlpBody[] = {"layers", "hidden", "input_features"};
  static constexpr std::string_view kVisionBody[] = {"image_size"};
  static constexpr std::string_view kResnetBody[] = {"stages", "stem", "feature_pool"};
  static constexpr std::string_view kLatentAttention[] = {
      "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};
  static constexpr std::string_view kMoe[] = {"moe_ffn_hidden", "shared_ffn_hidden",
                                              "shared_expert_gate", "first_dense_layers",
                                              "moe_layer_period"};
  std::vector<std::string_view> keys{"name"};
  ModelFamily body = spec.family;
  if (is_transformer(spec.family)) {
    // experts and top_k outside the moe family have their own error (check_experts).
    keys.assign(std::begin(kTransformer), std::end(kTransformer));
    if (spec.family == ModelFamily::kMoe) keys.insert(keys.end(), std::begin(kMoe), std::end(kMoe));
    // Latent attention's own error names other families (check_latent_attention).
    keys.insert(keys.end(), std::begin(kLatentAttention), std::end(kLatentAttention));
    keys.push_back("name");
    return keys;
  }
  keys.push_back("classes");
  if (spec.family == ModelFamily::kClassifier) {
    keys.push_back("backbone");
    keys.push_back("hidden");
    keys.push_back("embedding");
    keys.push_back("sample_rate");
    keys.push_back("knn_candidates");
    body = model_family_from_name(spec.backbone).value_or(ModelFamily::kClassifier);
  }
  if (body == ModelFamily::kMlp) {
    keys.insert(keys.end(), std::begin(kMlpBody), std::end(kMlpBody));
  } else if (is_vision(body)) {
    keys.insert(keys.end(), std::begin(kVisionBody), std::end(kVisionBody));
    if (body == ModelFamily::kResnet) {
      keys.insert(keys.end(), std::begin(kResnetBody), std::end(kResnetBody));
    }
  }
  return keys;
}

std::string_view model_family_name(ModelFamily f) { return name_in(kFamilyNames, f); }

std::optional<ModelFamily> model_family_from_name(std::string_view name) {
  return value_in(kFamilyNames, name);
}

bool is_vision(ModelFamily f) {
  return f == ModelFamily::kResnet50 || f == ModelFamily::kResnet || f == ModelFamily::kAlexnet ||
         f == ModelFamily::kVgg16;
}

std::string_view resnet_block_name(ResnetBlock b) { return name_in(kResnetBlockNames, b); }

bool is_transformer(ModelFamily f) {
  return f == ModelFamily::kGpt || f == ModelFamily::kLlama || f == ModelFamily::kMoe ||
         f == ModelFamily::kBert;
}

std::span<const ModelPreset> model_presets() { return presets(); }

const ModelPreset* find_model_preset(std::string_view name) {
  for (const ModelPreset& p : presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<std::string> validate_model_spec(const ModelSpec& spec) {
  Problems problems;
  // Out of bounds, the other checks' arithmetic (and the workload's) would overflow.
  if (!check_bounds(spec, problems)) return problems.take();
  if (is_transformer(spec.family)) {
    check_transformer(spec, problems);
  } else if (is_vision(spec.family)) {
    check_image(spec, spec.family, problems);
    check_classes(spec, problems);
  } else if (spec.family == ModelFamily::kMlp) {
    check_mlp_body(spec, problems);
    check_classes(spec, problems);
  } else {
    check_classifier(spec, problems);
  }
  return problems.take();
}

}  // namespace dtsim::models
