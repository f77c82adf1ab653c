// Hugging Face config.json import: the real configs of tests/models/data read into the
// expected dimensions, and errors that name the source and the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "models/model_spec.h"
#include "models/workload.h"

namespace dtsim::models {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json load(const std::string& file) {
  std::ifstream in(std::string(DTSIM_SOURCE_DIR) + "/tests/models/data/" + file);
  if (!in) throw std::runtime_error("cannot open " + file);
  return json::parse(in);
}

// The HfConfigError message for `config`, or "" if it imports.
std::string import_error(const json& config) {
  try {
    model_spec_from_hf_config(config, "config.json");
  } catch (const HfConfigError& e) {
    return e.what();
  }
  return "";
}

struct Expected {
  const char* file;
  const char* name;
  ModelFamily family;
  int layers;
  int64_t hidden;
  int heads;
  int kv_heads;
  int64_t ffn;
  int64_t vocab;
  int64_t seq_len;
  bool tied;
  int experts;
  int top_k;
};

TEST(HfConfigTest, ImportsEveryFixture) {
  const Expected expected[] = {
      {"Meta-Llama-3-8B.json", "llama", ModelFamily::kLlama, 32, 4096, 32, 8, 14336, 128256, 8192,
       false, 0, 0},
      // max_position_embeddings 32768, capped at 8192.
      {"Mistral-7B-v0.1.json", "mistral", ModelFamily::kLlama, 32, 4096, 32, 8, 14336, 32000, 8192,
       false, 0, 0},
      {"Qwen2-7B.json", "qwen2", ModelFamily::kLlama, 28, 3584, 28, 4, 18944, 152064, 8192, false,
       0, 0},
      // head_dim 128 = 4096 / 32: accepted.
      {"Qwen3-8B.json", "qwen3", ModelFamily::kLlama, 36, 4096, 32, 8, 12288, 151936, 8192, false,
       0, 0},
      // n_inner absent: 4 * n_embd; GPT-2 ties its LM head.
      {"gpt2.json", "gpt2", ModelFamily::kGpt, 12, 768, 12, 0, 3072, 50257, 1024, true, 0, 0},
      {"Mixtral-8x7B-v0.1.json", "mixtral", ModelFamily::kMoe, 32, 4096, 32, 8, 14336, 32000, 8192,
       false, 8, 2},
      // head_dim 128, not 1024 / 16: kept (see below).
      {"Qwen3-0.6B.json", "qwen3", ModelFamily::kLlama, 28, 1024, 16, 8, 3072, 151936, 8192, true,
       0, 0},
      // ffn_hidden is the dense width; the experts' is moe_ffn_hidden (checked below).
      {"Qwen3-30B-A3B.json", "qwen3_moe", ModelFamily::kMoe, 48, 2048, 32, 4, 6144, 151936, 8192,
       false, 128, 8},
      {"Qwen1.5-MoE-A2.7B.json", "qwen2_moe", ModelFamily::kMoe, 24, 2048, 16, 16, 5632, 151936,
       8192, false, 60, 4},
      {"gpt-oss-20b.json", "gpt_oss", ModelFamily::kMoe, 24, 2880, 64, 8, 2880, 201088, 8192,
       false, 32, 4},
  };
  for (const Expected& e : expected) {
    const ModelSpec spec = model_spec_from_hf_config(load(e.file), e.file);
    EXPECT_EQ(spec.name, e.name) << e.file;
    EXPECT_EQ(spec.family, e.family) << e.file;
    EXPECT_EQ(spec.layers, e.layers) << e.file;
    EXPECT_EQ(spec.hidden, e.hidden) << e.file;
    EXPECT_EQ(spec.heads, e.heads) << e.file;
    EXPECT_EQ(spec.kv_heads, e.kv_heads) << e.file;
    EXPECT_EQ(spec.ffn_hidden, e.ffn) << e.file;
    EXPECT_EQ(spec.vocab, e.vocab) << e.file;
    EXPECT_EQ(spec.seq_len, e.seq_len) << e.file;
    EXPECT_EQ(spec.tied_embeddings, e.tied) << e.file;
    EXPECT_EQ(spec.experts, e.experts) << e.file;
    EXPECT_EQ(spec.top_k, e.top_k) << e.file;
    EXPECT_NO_THROW(build_workload(spec, WorkloadShape{1, 128, Precision::kBf16})) << e.file;
  }
}

// The imports build workloads of the published sizes.
TEST(HfConfigTest, ImportedParameterCounts) {
  auto params = [](const char* file) {
    const ModelSpec spec = model_spec_from_hf_config(load(file), file);
    return static_cast<double>(build_workload(spec, WorkloadShape{}).params());
  };
  EXPECT_NEAR(params("Meta-Llama-3-8B.json") / 8.03e9, 1.0, 0.005);
  EXPECT_NEAR(params("Mistral-7B-v0.1.json") / 7.24e9, 1.0, 0.005);
  EXPECT_NEAR(params("Mixtral-8x7B-v0.1.json") / 46.7e9, 1.0, 0.005);
  EXPECT_NEAR(params("gpt2.json") / 124.4e6, 1.0, 0.005);
  // Qwen2-7B: 7.6B; its QKV biases (under 1M) are left out.
  EXPECT_NEAR(params("Qwen2-7B.json") / 7.62e9, 1.0, 0.005);
  // Qwen3 model cards: 0.6B (0.44B without embeddings, which are tied), 8.2B, and 30.5B
  // of which 3.3B are activated per token.
  EXPECT_NEAR(params("Qwen3-0.6B.json") / 0.596e9, 1.0, 0.01);
  EXPECT_NEAR(params("Qwen3-8B.json") / 8.19e9, 1.0, 0.005);
  EXPECT_NEAR(params("Qwen3-30B-A3B.json") / 30.5e9, 1.0, 0.01);
  // Qwen1.5-MoE-A2.7B's model card: 14.3B in all (60 experts of 1,408 and a shared expert of
  // 5,632 per layer; its QKV biases are left out).
  EXPECT_NEAR(params("Qwen1.5-MoE-A2.7B.json") / 14.3e9, 1.0, 0.005);
  // OpenAI's gpt-oss model card: 20.91 B in all (its attention, router and expert biases,
  // 7 M, are left out).
  EXPECT_NEAR(params("gpt-oss-20b.json") / 20.91e9, 1.0, 0.005);
}

// DeepSeek-V3 (deepseek-ai/DeepSeek-V3's config.json): 671B without its multi-token
// prediction module (the paper's count; the checkpoint's 685B adds its 14B), counted by
// hand: per layer the latent attention's q_down 7168 x 1536, q_norm 1536, q_up 1536 x
// 128 x 192, kv_down 7168 x 576, kv_norm 512, kv_up 512 x 128 x 256 and proj 128 x 128 x
// 7168 (187,107,328) and two norms of 7168; 3 dense layers' SwiGLU 3 x 7168 x 18432; 58
// MoE layers' router 7168 x 256 and 257 SwiGLUs of 3 x 7168 x 2048 (256 routed, 1
// shared); embedding and head 2 x 129280 x 7168 and the final norm.
TEST(HfConfigTest, DeepSeekV3LatentAttentionAndExperts) {
  const ModelSpec spec = model_spec_from_hf_config(load("DeepSeek-V3.json"), "c");
  EXPECT_EQ(spec.family, ModelFamily::kMoe);
  EXPECT_TRUE(spec.mla());
  EXPECT_EQ(spec.q_lora_rank, 1536);
  EXPECT_EQ(spec.kv_lora_rank, 512);
  EXPECT_EQ(spec.qk_nope_head_dim + spec.qk_rope_head_dim, 192);
  EXPECT_EQ(spec.v_head_dim, 128);
  EXPECT_EQ(spec.experts, 256);
  EXPECT_EQ(spec.top_k, 8);
  EXPECT_EQ(spec.moe_ffn_hidden, 2048);
  EXPECT_EQ(spec.shared_ffn_hidden, 2048);
  EXPECT_EQ(spec.first_dense_layers, 3);
  EXPECT_EQ(spec.expert_groups, 8);
  EXPECT_EQ(spec.expert_groups_per_token, 4);
  EXPECT_EQ(spec.mtp_layers, 1);
  const int64_t attention =
      7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168;
  ASSERT_EQ(attention, 187107328);
  const int64_t per_layer = attention + 2 * 7168;
  const int64_t dense = 3 * 7168 * 18432;
  const int64_t moe = 7168 * 256 + 257 * (int64_t{3} * 7168 * 2048);
  const int64_t total = 61 * per_layer + 3 * dense + 58 * moe + 2 * int64_t{129280} * 7168 + 7168;
  EXPECT_EQ(total, 671026404352);
  const Workload w = build_workload(spec, WorkloadShape{1, 128, Precision::kBf16});
  EXPECT_EQ(w.params(), total);
  // DeepSeek-V2-Lite projects its queries directly (q_lora_rank null).
  json lite = load("DeepSeek-V3.json");
  lite["model_type"] = "deepseek_v2";
  lite["q_lora_rank"] = nullptr;
  const ModelSpec direct = model_spec_from_hf_config(lite, "c");
  EXPECT_EQ(direct.q_lora_rank, 0);
  const Workload wd = build_workload(direct, WorkloadShape{1, 128, Precision::kBf16});
  // The query's latent path (q_down, q_norm, q_up) becomes one projection 7168 x 128 x 192.
  EXPECT_EQ(w.params() - wd.params(),
            61 * (7168 * 1536 + 1536 + 1536 * 128 * 192 - int64_t{7168} * 128 * 192));
  lite["kv_lora_rank"] = 0;
  EXPECT_THAT(import_error(lite), HasSubstr("kv_lora_rank: expected a positive integer, got 0"));
}

// GPT-OSS alternates windowed (128 tokens) and full attention, starting windowed, and has
// a sink logit per head: 64 parameters a layer beyond the projections.
TEST(HfConfigTest, GptOssWindowsEveryOtherLayerAndHasSinks) {
  const ModelSpec spec = model_spec_from_hf_config(load("gpt-oss-20b.json"), "c");
  EXPECT_EQ(spec.window_of(0), 128);
  EXPECT_EQ(spec.window_of(1), 0);
  EXPECT_EQ(spec.window_of(22), 128);
  EXPECT_TRUE(spec.attention_sinks);
  EXPECT_EQ(spec.head_dim(), 64);
  EXPECT_EQ(spec.expert_ffn(), 2880);
  const Workload w = build_workload(spec, WorkloadShape{1, 4096, Precision::kBf16, true});
  double flash_windowed = 0, flash_full = 0;
  for (const Op& op : w.layers[1].ops) {
    if (op.name == "attn.flash") {
      flash_windowed = op.executed_fraction;
      EXPECT_EQ(op.params, 64);
    }
  }
  for (const Op& op : w.layers[2].ops) {
    if (op.name == "attn.flash") flash_full = op.executed_fraction;
  }
  // 32 tiles a side: full causal runs 528 of 1,024; a 128-token window 2 a row (63 in all).
  EXPECT_DOUBLE_EQ(flash_full, 528.0 / 1024);
  EXPECT_DOUBLE_EQ(flash_windowed, 63.0 / 1024);
}

// Qwen3's heads are head_dim wide whatever the hidden size: Qwen3-0.6B's QKV projection
// outputs 16 x 128 + 2 x 8 x 128 = 4096 (not 1024 + 2 x 8 x 64), its output projection reads
// 2048, and its per-head q/k RMSNorm is an op of its own.
TEST(HfConfigTest, ExplicitHeadDimShapesTheAttention) {
  const ModelSpec spec = model_spec_from_hf_config(load("Qwen3-0.6B.json"), "config.json");
  EXPECT_EQ(spec.head_dim(), 128);
  EXPECT_EQ(spec.q_width(), 2048);
  EXPECT_TRUE(spec.qk_norm);
  const Workload w = build_workload(spec, WorkloadShape{1, 128, Precision::kBf16});
  const Layer* block = nullptr;
  for (const Layer& l : w.layers) {
    if (l.kind == LayerKind::kTransformer) {
      block = &l;
      break;
    }
  }
  ASSERT_NE(block, nullptr);
  bool qk_norm = false;
  for (const Op& op : block->ops) {
    if (op.name == "attn.qkv") {
      EXPECT_EQ(op.gemm.n, 2048 + 2 * 8 * 128);
      EXPECT_EQ(op.gemm.k, 1024);
    }
    if (op.name == "attn.proj") {
      EXPECT_EQ(op.gemm.k, 2048);
      EXPECT_EQ(op.gemm.n, 1024);
    }
    qk_norm = qk_norm || op.name == "attn.qk_norm";
  }
  EXPECT_TRUE(qk_norm);
  // Without head_dim the width follows hidden / heads, and LLaMA has no q/k norm.
  json config = load("Qwen3-0.6B.json");
  config.erase("head_dim");
  config["model_type"] = "llama";
  const ModelSpec derived = model_spec_from_hf_config(config, "config.json");
  EXPECT_EQ(derived.head_dim(), 64);
  EXPECT_FALSE(derived.qk_norm);
}

TEST(HfConfigTest, NameOrPathNamesTheSpec) {
  json config = load("Meta-Llama-3-8B.json");
  config["_name_or_path"] = "meta-llama/Meta-Llama-3-8B";
  EXPECT_EQ(model_spec_from_hf_config(config, "config.json").name, "meta-llama/Meta-Llama-3-8B");
}

TEST(HfConfigTest, OptionalFieldsTakeTheirDefaults) {
  json config = load("Meta-Llama-3-8B.json");
  config.erase("num_key_value_heads");
  config.erase("tie_word_embeddings");
  const ModelSpec spec = model_spec_from_hf_config(config, "config.json");
  EXPECT_EQ(spec.kv_heads, 32);
  EXPECT_FALSE(spec.tied_embeddings);
  json gpt = load("gpt2.json");
  gpt["n_inner"] = 1024;
  EXPECT_EQ(model_spec_from_hf_config(gpt, "config.json").ffn_hidden, 1024);
  gpt["n_inner"] = nullptr;
  EXPECT_EQ(model_spec_from_hf_config(gpt, "config.json").ffn_hidden, 3072);
}

// Fine-grained MoE layouts: expert width apart from the dense one, dense layers first or on
// a period (Qwen's decoder_sparse_step), and qwen2_moe's gated shared expert. A dense-layer
// list other than the first layers is refused with what dtsim can take.
TEST(HfConfigTest, MoeLayouts) {
  json config = load("Qwen3-30B-A3B.json");
  ModelSpec spec = model_spec_from_hf_config(config, "config.json");
  EXPECT_EQ(spec.moe_ffn_hidden, 768);
  EXPECT_EQ(spec.expert_ffn(), 768);
  EXPECT_EQ(spec.moe_layer_period, 1);
  EXPECT_EQ(spec.first_dense_layers, 0);
  EXPECT_EQ(spec.shared_ffn_hidden, 0);
  config["decoder_sparse_step"] = 2;
  spec = model_spec_from_hf_config(config, "config.json");
  EXPECT_FALSE(spec.is_moe_layer(0));
  EXPECT_TRUE(spec.is_moe_layer(1));
  config = load("Qwen3-30B-A3B.json");
  config["mlp_only_layers"] = {0, 1};
  spec = model_spec_from_hf_config(config, "config.json");
  EXPECT_EQ(spec.first_dense_layers, 2);
  EXPECT_FALSE(spec.is_moe_layer(1));
  EXPECT_TRUE(spec.is_moe_layer(2));
  config["mlp_only_layers"] = {0, 5};
  EXPECT_THAT(import_error(config),
              HasSubstr("config.json: mlp_only_layers: expected the first layers in order"));
  const ModelSpec qwen2 = model_spec_from_hf_config(load("Qwen1.5-MoE-A2.7B.json"), "c");
  EXPECT_EQ(qwen2.moe_ffn_hidden, 1408);
  EXPECT_EQ(qwen2.shared_ffn_hidden, 5632);
  EXPECT_TRUE(qwen2.shared_expert_gate);
  EXPECT_FALSE(qwen2.qk_norm);
  // Mixtral's experts are intermediate_size wide.
  EXPECT_EQ(model_spec_from_hf_config(load("Mixtral-8x7B-v0.1.json"), "c").expert_ffn(), 14336);
}

// Mistral windows every layer's attention; Mixtral's window is null; Qwen's is off, and
// when on it covers the layers from max_window_layers on; layer_types says per layer.
TEST(HfConfigTest, SlidingWindow) {
  EXPECT_EQ(model_spec_from_hf_config(load("Mistral-7B-v0.1.json"), "c").sliding_window, 4096);
  EXPECT_EQ(model_spec_from_hf_config(load("Mixtral-8x7B-v0.1.json"), "c").sliding_window, 0);
  EXPECT_EQ(model_spec_from_hf_config(load("Qwen2-7B.json"), "c").sliding_window, 0);
  json qwen = load("Qwen2-7B.json");
  qwen["use_sliding_window"] = true;
  // max_window_layers 28 of 28 layers: none windowed.
  EXPECT_EQ(model_spec_from_hf_config(qwen, "c").sliding_window, 0);
  qwen["max_window_layers"] = 0;  // every layer windowed
  EXPECT_EQ(model_spec_from_hf_config(qwen, "c").window_of(0), qwen["sliding_window"].get<int64_t>());
  qwen["max_window_layers"] = 20;
  const ModelSpec windowed = model_spec_from_hf_config(qwen, "c");
  EXPECT_EQ(windowed.window_of(19), 0);
  EXPECT_EQ(windowed.window_of(20), qwen["sliding_window"].get<int64_t>());
  json types = load("Mistral-7B-v0.1.json");
  types["layer_types"] = json::array();
  for (int i = 0; i < 32; ++i) types["layer_types"].push_back(i < 2 ? "full_attention" : "sliding");
  EXPECT_THAT(import_error(types),
              HasSubstr("layer_types: expected \"sliding_attention\" or \"full_attention\""));
  json mistral = load("Mistral-7B-v0.1.json");
  mistral["sliding_window"] = 0;
  EXPECT_THAT(import_error(mistral), HasSubstr("sliding_window: expected a positive integer"));
}

TEST(HfConfigTest, MissingField) {
  json config = load("Meta-Llama-3-8B.json");
  config.erase("num_hidden_layers");
  EXPECT_EQ(import_error(config),
            "config.json: num_hidden_layers: expected a positive integer, got nothing (the "
            "field is missing)");
  json moe = load("Mixtral-8x7B-v0.1.json");
  moe.erase("num_local_experts");
  EXPECT_THAT(import_error(moe), HasSubstr("config.json: num_local_experts: expected"));
}

TEST(HfConfigTest, WrongType) {
  json config = load("Meta-Llama-3-8B.json");
  config["hidden_size"] = "4096";
  EXPECT_EQ(import_error(config),
            "config.json: hidden_size: expected a positive integer, got \"4096\"");
  config = load("Meta-Llama-3-8B.json");
  config["num_attention_heads"] = 32.5;
  EXPECT_EQ(import_error(config),
            "config.json: num_attention_heads: expected a positive integer, got 32.5");
  config = load("Meta-Llama-3-8B.json");
  config["num_hidden_layers"] = -1;
  EXPECT_EQ(import_error(config),
            "config.json: num_hidden_layers: expected a positive integer, got -1");
  config = load("Meta-Llama-3-8B.json");
  config["tie_word_embeddings"] = "no";
  EXPECT_EQ(import_error(config),
            "config.json: tie_word_embeddings: expected true or false, "
            "got \"no\"");
  EXPECT_EQ(import_error(json::array({1, 2})), "config.json: expected a JSON object, got [1,2]");
}

TEST(HfConfigTest, UnknownModelTypeListsTheSupportedOnes) {
  json config = load("Meta-Llama-3-8B.json");
  config["model_type"] = "bert";
  EXPECT_EQ(import_error(config),
            "config.json: model_type: expected one of llama, mistral, qwen2, qwen3, qwen2_moe, "
            "qwen3_moe, "
            "mixtral, gpt_oss, deepseek_v2, deepseek_v3, gpt2, got \"bert\"");
  config.erase("model_type");
  EXPECT_THAT(import_error(config), HasSubstr("model_type: expected one of llama"));
  EXPECT_THAT(import_error(config), HasSubstr("missing"));
}

TEST(HfConfigTest, InconsistentDimensionsAreReported) {
  json config = load("Meta-Llama-3-8B.json");
  config["num_key_value_heads"] = 5;
  EXPECT_EQ(import_error(config),
            "config.json: kv_heads: must divide heads (heads 32, kv_heads 5)");
  json gpt = load("gpt2.json");
  gpt["n_head"] = 7;
  EXPECT_THAT(import_error(gpt), HasSubstr("hidden: must be divisible by heads (hidden 768, "
                                           "heads 7)"));
}

}  // namespace
}  // namespace dtsim::models
