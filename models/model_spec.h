// A model's architecture by its dimensions: the presets of the zoo, explicit dimensions
// from a scenario, or a Hugging Face config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::models {

enum class ModelFamily {
  kGpt,
  kLlama,
  kMoe,
  kBert,
  kResnet50,
  kResnet,
  kAlexnet,
  kVgg16,
  kMlp,
  kClassifier
};
inline constexpr ModelFamily kAllModelFamilies[] = {
    ModelFamily::kGpt,      ModelFamily::kLlama,     ModelFamily::kMoe,     ModelFamily::kBert,
    ModelFamily::kResnet50, ModelFamily::kResnet,    ModelFamily::kAlexnet, ModelFamily::kVgg16,
    ModelFamily::kMlp,      ModelFamily::kClassifier};
std::string_view model_family_name(ModelFamily f);
std::optional<ModelFamily> model_family_from_name(std::string_view name);
bool is_transformer(ModelFamily f);  // gpt, llama, moe, bert
bool is_vision(ModelFamily f);       // resnet50, resnet, alexnet, vgg16

// A ResNet built from a list of stages (the resnet family): torchvision's residual blocks,
// the first block of a stage strided and projecting its shortcut where the shape changes.
enum class ResnetBlock {
  kBasic,       // two 3x3 convolutions of `width` (ResNet-18/34)
  kBottleneck,  // 1x1 to width, 3x3 (strided), 1x1 to 4 x width (ResNet-50/101/152, v1.5)
};
inline constexpr ResnetBlock kAllResnetBlocks[] = {ResnetBlock::kBasic, ResnetBlock::kBottleneck};
std::string_view resnet_block_name(ResnetBlock b);
inline constexpr int64_t kBottleneckExpansion = 4;  // its output is 4x the block's width
struct CnnStage {
  int blocks = 0;
  int64_t width = 0;
  int stride = 1;  // of the stage's first block
  ResnetBlock block = ResnetBlock::kBottleneck;
  int64_t output_channels() const {
    return block == ResnetBlock::kBottleneck ? kBottleneckExpansion * width : width;
  }
};
// The convolution (with batch norm and ReLU) before the stages: ImageNet's 7x7 stride-2
// convolution and 3x3 stride-2 max pool by default; face recognition's ResNets on 112x112
// crops (InsightFace) use a 3x3 stride-1 convolution and no pool.
struct CnnStem {
  int64_t width = 64;
  int kernel = 7;  // padded by kernel / 2
  int stride = 2;
  bool max_pool = true;
};
// What the backbone hands on: the last feature map averaged to one vector per sample
// (torchvision), or flattened whole (InsightFace's IResNets, into their 512-wide embedding).
enum class FeaturePool { kAverage, kFlatten };

struct ModelSpec {
  std::string name;
  ModelFamily family = ModelFamily::kGpt;
  // Transformers (gpt: LayerNorm, GeLU MLP with ffn_hidden = 4 * hidden by default, learned
  // positions; llama: RMSNorm, SwiGLU, rotary, grouped-query attention with kv_heads;
  // moe: llama with `experts` SwiGLU experts per layer, `top_k` routed per token;
  // bert: encoder with LayerNorm and GeLU, a pooler and a masked-LM head).
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // 0 = heads (multi-head attention)
  int64_t ffn_hidden = 0;
  int64_t vocab = 0;
  int experts = 0;
  int top_k = 0;
  // moe (Megatron-LM's and Hugging Face's fine-grained MoE): each expert's feed-forward
  // width (Qwen3-MoE's moe_intermediate_size; 0 = ffn_hidden, Mixtral's single width), set
  // apart from the dense layers' ffn_hidden.
  int64_t moe_ffn_hidden = 0;
  // Shared experts every token passes through beside its routed ones, as one SwiGLU of this
  // width (DeepSeek-V3: n_shared_experts x moe_intermediate_size; Qwen2-MoE:
  // shared_expert_intermediate_size); 0 = none. Qwen2-MoE scales its output by a sigmoid
  // gate of its own (shared_expert_gate).
  int64_t shared_ffn_hidden = 0;
  bool shared_expert_gate = false;
  // Layers whose feed-forward stays dense (an ffn_hidden SwiGLU): the first
  // `first_dense_layers` (DeepSeek-V3's first_k_dense_replace) and, after them, every layer
  // but each `moe_layer_period`-th (Qwen's decoder_sparse_step: layer i is MoE when
  // (i + 1) % period == 0).
  int first_dense_layers = 0;
  int moe_layer_period = 1;
  int64_t seq_len = 0;  // default sequence length (the training set-up may override it)
  bool tied_embeddings = false;
  // Width of one attention head; 0 = hidden / heads. Qwen3 sets it apart from the hidden
  // size (Qwen3-0.6B: 16 heads of 128 on a hidden size of 1024), so that Q and the
  // attention output are heads * head_dim wide.
  int64_t explicit_head_dim = 0;
  // RMSNorm over each head of Q and K before rotary (Qwen3's q_norm and k_norm).
  bool qk_norm = false;
  // Sliding-window attention (Mistral 7B: 4096): each query attends to at most this many
  // tokens back, itself included; 0 = the whole causal prefix.
  int64_t sliding_window = 0;
  // Which layers the window applies to: a pattern repeated over the layers, true for a
  // windowed layer (Gemma 2 and GPT-OSS alternate windowed and full attention, starting
  // windowed: {true, false}); empty = every layer.
  std::vector<bool> window_pattern;
  // GPT-OSS's attention sinks: a learned logit per head joins every softmax's denominator
  // (one parameter a head, a term of the softmax a row).
  bool attention_sinks = false;
  // DeepSeek-V2/V3's multi-head latent attention (llama and moe families; on when
  // kv_lora_rank > 0): queries through a q_lora_rank-wide latent (0: projected directly
  // from the hidden state), keys and values through a kv_lora_rank-wide latent; QK^T over
  // heads of qk_nope_head_dim + qk_rope_head_dim (the rotary part of K one per token,
  // shared by the heads), V and the attention output in heads of v_head_dim.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  bool mla() const { return kv_lora_rank > 0; }
  // What a Hugging Face DeepSeek config gives beyond what dtsim models, kept so that a run
  // says it left them out: node-limited routing (each token's experts in at most
  // expert_groups_per_token of expert_groups groups: DeepSeek-V3's topk_group 4 of n_group 8)
  // and multi-token prediction modules (num_nextn_predict_layers).
  int expert_groups = 0;
  int expert_groups_per_token = 0;
  int mtp_layers = 0;
  // Vision (resnet50, resnet, alexnet, vgg16): input resolution and classes.
  int image_size = 224;
  int64_t classes = 1000;
  // resnet (and a classifier's resnet backbone): the stages in order, the stem and the
  // pooling of the last feature map.
  std::vector<CnnStage> stages;
  CnnStem stem;
  FeaturePool feature_pool = FeaturePool::kAverage;
  // mlp: `layers` fully connected layers of `hidden` units on an input of `input_features`,
  // then `classes` outputs. classifier: a backbone (`backbone`, a vision family name or
  // "mlp") producing `hidden` features, then one fully connected layer of `classes`
  // outputs with softmax (up to 1e8 classes).
  int64_t input_features = 0;
  std::string backbone;
  // classifier: an embedding layer of this width between the backbone's features and the
  // classes (a fully connected layer and batch norm, the 512-wide embedding face
  // recognition trains, InsightFace's "E" head); 0 = the features themselves.
  int64_t embedding = 0;
  // classifier, sampled softmax: each step's GEMM, softmax, gradients and update cover only
  // some of the classes, while every class centre and its optimizer state stays on its
  // rank. Partial FC (An et al., CVPR 2022) samples `sample_rate` of each shard's centres
  // (1 = the full softmax); KNN softmax (Song et al., KDD 2020) takes the union of each
  // sample's `knn_candidates` nearest centres (0 = off), at most batch x candidates.
  double sample_rate = 1;
  int64_t knn_candidates = 0;
  // The classes one step's softmax covers for `batch` samples.
  int64_t sampled_classes(int64_t batch) const;

  // Whether block `layer` (from 0) routes its tokens to experts.
  bool is_moe_layer(int layer) const {
    return family == ModelFamily::kMoe && layer >= first_dense_layers && moe_layer_period > 0 &&
           (layer + 1) % moe_layer_period == 0;
  }
  // The window of block `layer`'s attention; 0 = the whole causal prefix.
  int64_t window_of(int layer) const {
    if (sliding_window <= 0 || window_pattern.empty()) return sliding_window;
    return window_pattern[static_cast<size_t>(layer) % window_pattern.size()] ? sliding_window : 0;
  }
  int64_t expert_ffn() const { return moe_ffn_hidden > 0 ? moe_ffn_hidden : ffn_hidden; }
  int64_t kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t head_dim() const {
    if (explicit_head_dim > 0) return explicit_head_dim;
    return heads > 0 ? hidden / heads : 0;
  }
  // The query projection's output and the attention output projection's input.
  int64_t q_width() const { return int64_t{heads} * head_dim(); }
};

struct ModelPreset {
  std::string_view name;
  std::string_view description;
  ModelSpec spec;
};
std::span<const ModelPreset> model_presets();
const ModelPreset* find_model_preset(std::string_view name);

// Problems with a model description, one sentence each, naming the field
// ("layers: must be positive, got 0"). Empty when the spec can be built.
std::vector<std::string> validate_model_spec(const ModelSpec& spec);
// The longest sequence a model or a training set-up may give (16M tokens).
inline constexpr int64_t kMaxSequence = int64_t{1} << 24;

// The scenario keys (`model.*`) that the spec's family builds from; a key outside them
// would be ignored, so the loader rejects it.
std::vector<std::string_view> model_keys_used(const ModelSpec& spec);

// A Hugging Face config.json (LLaMA, Mistral, Qwen2/3, GPT-2, Mixtral families).
class HfConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// `source` names the file in messages ("config.json: num_hidden_layers: expected a
// positive integer, got \"x\""). Throws HfConfigError.
ModelSpec model_spec_from_hf_config(const nlohmann::json& config, const std::string& source);

}  // namespace dtsim::models
