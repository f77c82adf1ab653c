// Multi-head latent attention (DeepSeek-V2/V3) on a tiny layer, worked by hand: its ops and
// GEMM shapes, the fused kernel's FLOPs over two head widths, what the block keeps, how
// tensor parallelism splits it, and what it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "models/memory_model.h"
#include "models/model_spec.h"
#include "models/workload.h"

namespace dtsim::models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Hidden 64, 4 heads; query latent 32, key/value latent 16; QK^T heads of 8 + 4 (rope),
// V heads of 8.
ModelSpec tiny_mla() {
  ModelSpec s;
  s.name = "mla";
  s.family = ModelFamily::kLlama;
  s.layers = 1;
  s.hidden = 64;
  s.heads = 4;
  s.ffn_hidden = 128;
  s.vocab = 512;
  s.q_lora_rank = 32;
  s.kv_lora_rank = 16;
  s.qk_nope_head_dim = 8;
  s.qk_rope_head_dim = 4;
  s.v_head_dim = 8;
  return s;
}

const Op& op(const Layer& l, std::string_view name) {
  for (const Op& o : l.ops) {
    if (o.name == name) return o;
  }
  throw std::runtime_error("no op " + std::string(name));
}

std::vector<std::string> attention_ops(const Layer& l) {
  std::vector<std::string> names;
  for (const Op& o : l.ops) {
    if (o.name.starts_with("attn.")) names.push_back(o.name);
  }
  return names;
}

// b 2, s 16: 32 tokens.
TEST(LatentAttention, OpsAndShapes) {
  ASSERT_THAT(validate_model_spec(tiny_mla()), ::testing::IsEmpty());
  const Workload w = build_workload(tiny_mla(), WorkloadShape{2, 16, Precision::kBf16, true});
  const Layer& block = w.layers[1];
  EXPECT_THAT(attention_ops(block),
              ElementsAre("attn.norm", "attn.q_down", "attn.q_norm", "attn.q_up", "attn.kv_down",
                          "attn.kv_norm", "attn.kv_up", "attn.rope", "attn.flash", "attn.proj",
                          "attn.residual"));
  EXPECT_EQ(op(block, "attn.q_down").gemm, (GemmDims{32, 32, 64, 1, false, true}));
  EXPECT_EQ(op(block, "attn.q_up").gemm, (GemmDims{32, 4 * 12, 32, 1, false, true}));
  EXPECT_EQ(op(block, "attn.kv_down").gemm, (GemmDims{32, 16 + 4, 64, 1, false, true}));
  EXPECT_EQ(op(block, "attn.kv_up").gemm, (GemmDims{32, 4 * (8 + 8), 16, 1, false, true}));
  EXPECT_EQ(op(block, "attn.proj").gemm, (GemmDims{32, 64, 4 * 8, 1, false, true}));
  // The down projections and latent norms are whole on every tensor-parallel rank (on its
  // sequence shard under sequence parallelism); the up projections split by columns.
  EXPECT_EQ(op(block, "attn.q_down").split, TensorSplit::kSequence);
  EXPECT_EQ(op(block, "attn.kv_norm").split, TensorSplit::kSequence);
  EXPECT_EQ(op(block, "attn.kv_up").split, TensorSplit::kColumn);
  EXPECT_EQ(op(block, "attn.q_norm").params, 32);
  EXPECT_EQ(op(block, "attn.kv_norm").params, 16);
  // QK^T over 12 and attention over V of 8, for 2 x 4 heads of 16 tokens: 2 x 8 x 16^2 x
  // (12 + 8) = 81,920 FLOPs (one 128-token tile: all of it runs).
  const Op& flash = op(block, "attn.flash");
  EXPECT_DOUBLE_EQ(flash.fwd_flops, 81920);
  EXPECT_DOUBLE_EQ(flash.bwd_flops, 2.5 * 81920);
  EXPECT_EQ(flash.attention.head_dim, 12);
  EXPECT_EQ(flash.attention.kv_heads, 4);
  // Reads: both latents from the block's norm, the rope from the query and the keys'
  // latent, the fused kernel V from the keys' up projection.
  const auto index = [&](std::string_view name) {
    return static_cast<int>(&op(block, name) - block.ops.data());
  };
  EXPECT_THAT(op(block, "attn.kv_down").reads, ElementsAre(index("attn.norm")));
  EXPECT_THAT(op(block, "attn.rope").reads, ElementsAre(index("attn.q_up"), index("attn.kv_down")));
  EXPECT_THAT(flash.reads, ElementsAre(index("attn.rope"), index("attn.kv_up")));
}

// What the attention keeps, 2-byte elements, 32 tokens: the normed input 32 x 64 (once
// for both down projections), the query latent's norm input and up-projection input
// 32 x 32 each, the key latent's 32 x 16 each, Q, K and V 32 x (48 + 48 + 32), the
// kernel's log-sum-exp 8 x 16 fp32, and the output projection's input 32 x 32.
TEST(LatentAttention, KeptActivationsByHand) {
  const Workload w = build_workload(tiny_mla(), WorkloadShape{2, 16, Precision::kBf16, true});
  double kept = 0;
  for (const Op& o : w.layers[1].ops) {
    if (o.name.starts_with("attn.") && o.name != "attn.norm" && o.name != "attn.residual")
      kept += o.saved_bytes;
  }
  const double by_hand =
      2.0 * (32 * 64 + 2 * 32 * 32 + 2 * 32 * 16 + 32 * (48 + 48 + 32) + 32 * 32) + 4.0 * 8 * 16;
  EXPECT_DOUBLE_EQ(kept, by_hand);
  EXPECT_DOUBLE_EQ(by_hand, 20992);
  // Unfused: QK^T over 12, the softmax's 2 x 4 x 16 x 16 scores kept, attention over V of 8.
  const Workload unfused = build_workload(tiny_mla(), WorkloadShape{2, 16, Precision::kBf16});
  EXPECT_EQ(op(unfused.layers[1], "attn.score").gemm, (GemmDims{16, 16, 12, 8, false, true}));
  EXPECT_EQ(op(unfused.layers[1], "attn.context").gemm, (GemmDims{16, 8, 16, 8, false, false}));
  EXPECT_DOUBLE_EQ(op(unfused.layers[1], "attn.softmax").saved_bytes, 2.0 * 8 * 16 * 16);
}

TEST(LatentAttention, QueriesWithoutALatentAndWhatIsRefused) {
  ModelSpec direct = tiny_mla();
  direct.q_lora_rank = 0;
  const Workload w = build_workload(direct, WorkloadShape{2, 16, Precision::kBf16, true});
  EXPECT_EQ(op(w.layers[1], "attn.q").gemm, (GemmDims{32, 48, 64, 1, false, true}));
  EXPECT_THAT(op(w.layers[1], "attn.rope").reads.front(),
              static_cast<int>(&op(w.layers[1], "attn.q") - w.layers[1].ops.data()));
  ModelSpec gpt = tiny_mla();
  gpt.family = ModelFamily::kGpt;
  EXPECT_THAT(validate_model_spec(gpt),
              ElementsAre(HasSubstr("kv_lora_rank: multi-head latent attention is modelled for "
                                    "the llama and moe families, got gpt")));
  ModelSpec gqa = tiny_mla();
  gqa.kv_heads = 2;
  gqa.v_head_dim = 0;
  EXPECT_THAT(validate_model_spec(gqa),
              ::testing::UnorderedElementsAre("v_head_dim: must be positive, got 0",
                                              HasSubstr("kv_heads: latent attention expands")));
}

}  // namespace
}  // namespace dtsim::models
