// Hugging Face config.json import: LLaMA-style decoders (llama, mistral, qwen2, qwen3),
// Mixtral MoE and GPT-2, read into a ModelSpec with "<source>: <field>: expected ..., got
// ..." errors.
//
// Choices:
//  - seq_len is max_position_embeddings (n_positions for GPT-2) capped at 8192: long-context
//    models are pre-trained on shorter sequences and extended later, and the training set-up
//    can ask for any length.
//  - head_dim (Qwen3 and some later configs) is kept when it differs from hidden_size /
//    num_attention_heads (Qwen3-0.6B: 16 heads of 128 on a hidden size of 1024), and Qwen3's
//    per-head RMSNorm of Q and K (q_norm, k_norm) is an op of its own.
//  - qwen3_moe and qwen2_moe are the moe family: num_experts experts of
//    moe_intermediate_size, top num_experts_per_tok, dense layers of intermediate_size where
//    decoder_sparse_step skips layers or mlp_only_layers names the first ones (other lists
//    are rejected); qwen2_moe adds its gated shared expert of
//    shared_expert_intermediate_size. Mixtral's experts are intermediate_size wide.
//  - sliding_window (Mistral 7B v0.1: 4096) applies to every layer and cuts the attention
//    tiles FlashAttention runs, unless layer_types says per layer ("sliding_attention",
//    "full_attention": GPT-OSS, newer configs) or Qwen's use_sliding_window windows the
//    layers from max_window_layers on (Qwen2's modelling code); Qwen's window is otherwise
//    off and its sliding_window only a size.
//  - gpt_oss is the moe family: num_local_experts experts of intermediate_size, top
//    num_experts_per_tok, head_dim apart from the hidden size, attention sinks, and its
//    alternating windowed and full layers.
//  - deepseek_v3 and deepseek_v2 are the moe family with multi-head latent attention
//    (q_lora_rank, null for V2-Lite: queries projected directly; kv_lora_rank,
//    qk_nope_head_dim, qk_rope_head_dim, v_head_dim): n_routed_experts of
//    moe_intermediate_size, top num_experts_per_tok, n_shared_experts of the same width as
//    one shared SwiGLU, the first first_k_dense_replace layers dense (intermediate_size),
//    every later one MoE (moe_layer_freq must be 1). Node-limited routing (n_group, topk_group) and
//    multi-token prediction (num_nextn_predict_layers) are kept on the spec and a run notes
//    that they are not modelled.
//  - Attention biases (Qwen2) and rope settings do not change the FLOPs or memory the
//    simulator prices by more than a rounding and are ignored.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace dtsim::models {
namespace {

using nlohmann::json;

constexpr int64_t kMaxDefaultSeqLen = 8192;
// GPT-2's MLP width when n_inner is null.
constexpr int64_t kGpt2FfnMultiple = 4;
constexpr std::string_view kSupportedTypes =
    "llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe, mixtral, gpt_oss, deepseek_v2, "
    "deepseek_v3, gpt2";
constexpr size_t kMaxShownValueChars = 60;

std::string shown(const json& value) {
  std::string text = value.dump();
  if (text.size() > kMaxShownValueChars) text = text.substr(0, kMaxShownValueChars) + "...";
  return text;
}

// Reads typed fields of one config object; every failure names the source and the field.
class ConfigReader {
 public:
  ConfigReader(const json& config, const std::string& source) : config_(config), source_(source) {
    if (!config.is_object()) {
      throw HfConfigError(source + ": expected a JSON object, got " + shown(config));
    }
  }

  [[noreturn]] void fail(std::string_view field, std::string_view expected,
                         const std::string& got) const {
    throw HfConfigError(source_ + ": " + std::string(field) + ": expected " +
                        std::string(expected) + ", got " + got);
  }

  bool has(std::string_view field) const {
    const auto it = config_.find(field);
    return it != config_.end() && !it->is_null();
  }

  int64_t positive_int(std::string_view field,
                       int64_t max = std::numeric_limits<int>::max()) const {
    const auto it = config_.find(field);
    if (it == config_.end()) fail(field, "a positive integer", "nothing (the field is missing)");
    if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > max) {
      fail(field, "a positive integer", shown(*it));
    }
    return it->get<int64_t>();
  }

  int64_t positive_int_or(std::string_view field, int64_t fallback) const {
    return has(field) ? positive_int(field) : fallback;
  }

  int64_t non_negative_int_or(std::string_view field, int64_t fallback) const {
    if (!has(field)) return fallback;
    const json& v = config_.at(field);
    if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(field, "0 or a positive integer", shown(v));
    return v.get<int64_t>();
  }

  bool boolean_or(std::string_view field, bool fallback) const {
    if (!has(field)) return fallback;
    const json& value = config_.at(field);
    if (!value.is_boolean()) fail(field, "true or false", shown(value));
    return value.get<bool>();
  }

  std::string string(std::string_view field, std::string_view expected) const {
    const auto it = config_.find(field);
    if (it == config_.end()) fail(field, expected, "nothing (the field is missing)");
    if (!it->is_string()) fail(field, expected, shown(*it));
    return it->get<std::string>();
  }

  std::string string_or(std::string_view field, std::string fallback) const {
    return has(field) ? string(field, "a string") : fallback;
  }

 private:
  const json& config_;
  const std::string& source_;
};

int to_int(int64_t value) { return static_cast<int>(value); }

int64_t default_seq_len(int64_t positions) { return std::min(positions, kMaxDefaultSeqLen); }

// LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config and MixtralConfig share these names.
// `experts_field`: Mixtral's num_local_experts or Qwen3-MoE's num_experts (moe only).
ModelSpec llama_like(const ConfigReader& r, ModelFamily family,
                     std::string_view experts_field = "num_local_experts") {
  ModelSpec spec;
  spec.family = family;
  spec.layers = to_int(r.positive_int("num_hidden_layers"));
  spec.hidden = r.positive_int("hidden_size", std::numeric_limits<int64_t>::max());
  spec.heads = to_int(r.positive_int("num_attention_heads"));
  spec.kv_heads = to_int(r.positive_int_or("num_key_value_heads", spec.heads));
  spec.ffn_hidden = r.positive_int("intermediate_size", std::numeric_limits<int64_t>::max());
  if (family == ModelFamily::kMoe && r.has("moe_intermediate_size")) {
    spec.moe_ffn_hidden =
        r.positive_int("moe_intermediate_size", std::numeric_limits<int64_t>::max());
  }
  spec.vocab = r.positive_int("vocab_size", std::numeric_limits<int64_t>::max());
  spec.seq_len = default_seq_len(
      r.positive_int("max_position_embeddings", std::numeric_limits<int64_t>::max()));
  spec.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  if (r.has("head_dim")) {
    const int64_t head_dim = r.positive_int("head_dim");
    if (spec.hidden % spec.heads != 0 || head_dim != spec.hidden / spec.heads) {
      spec.explicit_head_dim = head_dim;
    }
  }
  if (family == ModelFamily::kMoe) {
    spec.experts = to_int(r.positive_int(experts_field));
    spec.top_k = to_int(r.positive_int("num_experts_per_tok"));
  }
  return spec;
}

// GPT2Config: n_layer, n_embd, n_head, n_inner (null: 4 * n_embd), n_positions; GPT-2 ties
// its LM head to the token embedding (PretrainedConfig's default).
ModelSpec gpt2(const ConfigReader& r) {
  ModelSpec spec;
  spec.family = ModelFamily::kGpt;
  spec.layers = to_int(r.positive_int("n_layer"));
  spec.hidden = r.positive_int("n_embd", std::numeric_limits<int64_t>::max());
  spec.heads = to_int(r.positive_int("n_head"));
  spec.ffn_hidden = r.has("n_inner")
                        ? r.positive_int("n_inner", std::numeric_limits<int64_t>::max())
                        : kGpt2FfnMultiple * spec.hidden;
  spec.vocab = r.positive_int("vocab_size", std::numeric_limits<int64_t>::max());
  spec.seq_len =
      default_seq_len(r.positive_int("n_positions", std::numeric_limits<int64_t>::max()));
  spec.tied_embeddings = r.boolean_or("tie_word_embeddings", true);
  return spec;
}

// Qwen's MoE layers: layer i is MoE unless it is in mlp_only_layers or (i + 1) is not a
// multiple of decoder_sparse_step. dtsim keeps dense layers first (first_dense_layers), so
// mlp_only_layers must be 0, 1, ..., k - 1.
void qwen_moe_layers(const ConfigReader& r, const json& config, ModelSpec& spec) {
  spec.moe_layer_period = to_int(r.positive_int_or("decoder_sparse_step", 1));
  if (!r.has("mlp_only_layers")) return;
  const json& list = config.at("mlp_only_layers");
  bool leading = list.is_array();
  for (size_t i = 0; leading && i < list.size(); ++i) {
    leading = list[i].is_number_integer() && list[i].get<int64_t>() == static_cast<int64_t>(i);
  }
  if (!leading) {
    r.fail("mlp_only_layers",
           "the first layers in order, [0, 1, ..., k - 1] (dtsim keeps its dense layers first)",
           shown(list));
  }
  spec.first_dense_layers = static_cast<int>(list.size());
}

// The window and the layers it applies to (see the file comment).
void read_window(const ConfigReader& r, const json& config, bool qwen, ModelSpec& spec) {
  const bool qwen_window = qwen && r.boolean_or("use_sliding_window", false);
  if (!r.has("sliding_window") || (qwen && !qwen_window)) return;
  spec.sliding_window = r.positive_int("sliding_window", std::numeric_limits<int64_t>::max());
  if (r.has("layer_types")) {
    const json& types = config.at("layer_types");
    if (!types.is_array() || types.size() != static_cast<size_t>(spec.layers)) {
      r.fail("layer_types", "a list of num_hidden_layers (" + std::to_string(spec.layers) +
                                ") \"sliding_attention\" or \"full_attention\"",
             shown(types));
    }
    spec.window_pattern.clear();
    for (const json& t : types) {
      if (t != "sliding_attention" && t != "full_attention") {
        r.fail("layer_types", "\"sliding_attention\" or \"full_attention\" for each layer",
               shown(t));
      }
      spec.window_pattern.push_back(t == "sliding_attention");
    }
  } else if (qwen_window) {
    const int64_t from = r.non_negative_int_or("max_window_layers", 0);
    for (int i = 0; i < spec.layers; ++i) spec.window_pattern.push_back(i >= from);
  }
  // A pattern without windowed layers leaves the window unused.
  if (!spec.window_pattern.empty() &&
      std::none_of(spec.window_pattern.begin(), spec.window_pattern.end(), [](bool w) { return w; })) {
    spec.sliding_window = 0;
    spec.window_pattern.clear();
  }
}

// DeepseekV3Config and DeepseekV2Config (see the file comment).
ModelSpec deepseek(const ConfigReader& r) {
  constexpr int64_t kWide = std::numeric_limits<int64_t>::max();
  ModelSpec spec = llama_like(r, ModelFamily::kMoe, "n_routed_experts");
  spec.explicit_head_dim = 0;
  spec.kv_heads = 0;  // latent attention expands keys and values for every head
  spec.moe_ffn_hidden = r.positive_int("moe_intermediate_size", kWide);
  spec.shared_ffn_hidden = r.non_negative_int_or("n_shared_experts", 0) * spec.moe_ffn_hidden;
  spec.first_dense_layers = to_int(r.non_negative_int_or("first_k_dense_replace", 0));
  // Hugging Face puts MoE on layers i % moe_layer_freq == 0, dtsim on (i + 1) % period ==
  // 0: they agree at 1, which every DeepSeek config uses.
  if (r.positive_int_or("moe_layer_freq", 1) != 1) {
    r.fail("moe_layer_freq", "1 (MoE on every layer after the dense ones)",
           std::to_string(r.positive_int("moe_layer_freq")));
  }
  spec.q_lora_rank = r.non_negative_int_or("q_lora_rank", 0);
  spec.kv_lora_rank = r.positive_int("kv_lora_rank", kWide);
  spec.qk_nope_head_dim = r.positive_int("qk_nope_head_dim", kWide);
  spec.qk_rope_head_dim = r.positive_int("qk_rope_head_dim", kWide);
  spec.v_head_dim = r.positive_int("v_head_dim", kWide);
  spec.expert_groups = to_int(r.non_negative_int_or("n_group", 0));
  spec.expert_groups_per_token = to_int(r.non_negative_int_or("topk_group", 0));
  spec.mtp_layers = to_int(r.non_negative_int_or("num_nextn_predict_layers", 0));
  return spec;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : "; ") + part;
  return out;
}

}  // namespace

ModelSpec model_spec_from_hf_config(const nlohmann::json& config, const std::string& source) {
  const ConfigReader reader(config, source);
  const std::string model_type =
      reader.string("model_type", "one of " + std::string(kSupportedTypes));
  ModelSpec spec;
  const bool qwen = model_type.starts_with("qwen");
  if (model_type == "llama" || model_type == "mistral" || model_type == "qwen2" ||
      model_type == "qwen3") {
    spec = llama_like(reader, ModelFamily::kLlama);
    spec.qk_norm = model_type == "qwen3";
  } else if (model_type == "mixtral") {
    spec = llama_like(reader, ModelFamily::kMoe);
  } else if (model_type == "qwen3_moe" || model_type == "qwen2_moe") {
    spec = llama_like(reader, ModelFamily::kMoe, "num_experts");
    qwen_moe_layers(reader, config, spec);
    spec.qk_norm = model_type == "qwen3_moe";
    if (model_type == "qwen2_moe") {
      spec.shared_ffn_hidden = reader.positive_int("shared_expert_intermediate_size",
                                                   std::numeric_limits<int64_t>::max());
      spec.shared_expert_gate = true;
    }
  } else if (model_type == "gpt_oss") {
    spec = llama_like(reader, ModelFamily::kMoe);
    spec.attention_sinks = true;
  } else if (model_type == "deepseek_v3" || model_type == "deepseek_v2") {
    spec = deepseek(reader);
  } else if (model_type == "gpt2") {
    spec = gpt2(reader);
  } else {
    reader.fail("model_type", "one of " + std::string(kSupportedTypes),
                shown(config.at("model_type")));
  }
  if (model_type != "gpt2") read_window(reader, config, qwen, spec);
  spec.name = reader.string_or("_name_or_path", "");
  if (spec.name.empty()) spec.name = model_type;
  const std::vector<std::string> problems = validate_model_spec(spec);
  if (!problems.empty()) throw HfConfigError(source + ": " + join(problems));
  return spec;
}

}  // namespace dtsim::models
