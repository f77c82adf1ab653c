// The tensors a GPT block's kernels bind, checked edge by edge against Megatron-LM's data
// flow: the residual adds read their sublayer's result and the residual stream, attention
// over V reads V after Q and K in the QKV tensor, a linear layer's backward reads the
// weight its forward read and writes that weight's gradient, a shared expert reads the
// norm's result.
#include "models/operand_binding.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "models/chunk_cost.h"
#include "models/workload.h"
#include "sim/device_catalog.h"

namespace dtsim::models {
namespace {

// A preset's family at a test's size: `layers` blocks of hidden 64 over 4 heads.
ModelSpec tiny(std::string_view preset, int layers) {
  ModelSpec s = find_model_preset(preset)->spec;
  s.layers = layers;
  s.hidden = 64;
  s.heads = 4;
  s.vocab = 512;
  return s;
}

Workload gpt(bool flash) {
  return build_workload(tiny("gpt2", 2), WorkloadShape{2, 32, Precision::kFp32, flash});
}

int index_of(const Layer& layer, std::string_view name) {
  for (size_t i = 0; i < layer.ops.size(); ++i) {
    if (layer.ops[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no op " << name << " in " << layer.name;
  return -1;
}

// The kernels of op `name` of layer `l` in one pass, unsplit, each with its bindings.
std::vector<std::pair<OpSignature, OpOperands>> kernels_of(const Workload& w, int l,
                                                           std::string_view name, bool backward) {
  const int o = index_of(w.layers[static_cast<size_t>(l)], name);
  std::vector<std::pair<OpSignature, OpOperands>> out;
  for (const OpSignature& k :
       op_kernels(w.layers[static_cast<size_t>(l)].ops[static_cast<size_t>(o)], backward,
                  RankShard{}, DType::kFp32, *find_builtin_device("CPU"))) {
    out.emplace_back(k, bind_operands(w, l, o, k));
  }
  return out;
}

const OperandBinding& bound(const OpOperands& operands, std::string_view operand) {
  for (const OperandBinding& b : operands) {
    if (b.operand == operand) return b;
  }
  ADD_FAILURE() << "operand " << operand << " is not bound";
  static const OperandBinding none;
  return none;
}

TensorRef output_of(const Workload& w, int l, std::string_view name) {
  return {TensorRole::kOutput, static_cast<uint32_t>(l),
          static_cast<uint32_t>(index_of(w.layers[static_cast<size_t>(l)], name))};
}

TEST(OperandBinding, ResidualAddsReadTheirSublayerAndTheResidualStream) {
  const Workload w = gpt(false);
  const int block = 1;  // layer 0 is the embedding
  const auto add = kernels_of(w, block, "attn.dropout_add", false);
  ASSERT_EQ(add.size(), 1u);
  EXPECT_EQ(bound(add[0].second, "a").tensor, output_of(w, block, "attn.proj"));
  // The block's input: the embedding layer's result, which its dropout writes.
  EXPECT_EQ(bound(add[0].second, "b").tensor, output_of(w, 0, "embed.dropout"));
  const auto mlp_add = kernels_of(w, block, "mlp.dropout_add", false);
  EXPECT_EQ(bound(mlp_add[0].second, "a").tensor, output_of(w, block, "mlp.fc2"));
  EXPECT_EQ(bound(mlp_add[0].second, "b").tensor, output_of(w, block, "attn.dropout_add"));
  // Backward: each input's gradient.
  const auto add_bwd = kernels_of(w, block, "attn.dropout_add", true);
  TensorRef proj_grad = output_of(w, block, "attn.proj");
  proj_grad.role = TensorRole::kOutputGrad;
  EXPECT_EQ(bound(add_bwd[0].second, "da").tensor, proj_grad);
}

TEST(OperandBinding, AttentionOverVReadsVAfterQAndKInTheQkvTensor) {
  const Workload w = gpt(false);
  const int block = 1;
  const auto pv = kernels_of(w, block, "attn.context", false);
  ASSERT_EQ(pv.size(), 1u);
  const GemmDims& g = pv[0].first.gemm;  // P [s, s] x V [s, head_dim], batch b * heads
  const OperandBinding& v = bound(pv[0].second, "b");
  EXPECT_EQ(v.tensor, output_of(w, block, "attn.qkv_bias"));
  EXPECT_EQ(v.offset, 2 * g.batch * g.k * g.n);  // Q and K before it
  const auto scores = kernels_of(w, block, "attn.score", false);
  const GemmDims& s = scores[0].first.gemm;  // Q [s, head_dim] x K^T
  EXPECT_EQ(bound(scores[0].second, "a").offset, 0);
  EXPECT_EQ(bound(scores[0].second, "b").offset, s.batch * s.m * s.k);
  // FlashAttention: Q, K and V at their offsets of the one tensor, their gradients alike.
  const Workload f = gpt(true);
  const auto flash = kernels_of(f, block, "attn.flash", true);
  const AttentionDims& a = flash[0].first.attention;
  const int64_t q = a.batch * a.heads * a.q_len * a.head_dim;
  EXPECT_EQ(bound(flash[0].second, "v").offset, 2 * q);
  EXPECT_EQ(bound(flash[0].second, "dk").offset, q);
  EXPECT_EQ(bound(flash[0].second, "dk").tensor.role, TensorRole::kOutputGrad);
}

// With rotary positions (llama) the rotated tensor holds Q and K only: attention reads
// them from it and V, and writes V's gradient, from the QKV projection's result.
TEST(OperandBinding, RotaryAttentionReadsVFromTheQkvProjection) {
  ModelSpec s = tiny("llama3-8b", 1);
  s.kv_heads = 2;
  s.ffn_hidden = 128;
  for (bool flash : {true, false}) {
    const Workload w = build_workload(s, WorkloadShape{2, 32, Precision::kFp32, flash});
    const TensorRef qkv = output_of(w, 1, "attn.qkv");
    const TensorRef rope = output_of(w, 1, "attn.rope");
    if (flash) {
      const auto bwd = kernels_of(w, 1, "attn.flash", true);
      EXPECT_EQ(bound(bwd[0].second, "q").tensor, rope);
      EXPECT_EQ(bound(bwd[0].second, "k").tensor, rope);
      EXPECT_EQ(bound(bwd[0].second, "v").tensor, qkv);
      EXPECT_EQ(bound(bwd[0].second, "dv").tensor,
                (TensorRef{TensorRole::kOutputGrad, qkv.layer, qkv.op}));
    } else {
      EXPECT_EQ(bound(kernels_of(w, 1, "attn.context", false)[0].second, "b").tensor, qkv);
      EXPECT_EQ(bound(kernels_of(w, 1, "attn.score", false)[0].second, "b").tensor, rope);
    }
  }
}

TEST(OperandBinding, ALinearLayersBackwardReadsItsWeightAndWritesItsGradient) {
  const Workload w = gpt(false);
  const int block = 2;
  const auto fwd = kernels_of(w, block, "mlp.fc1", false);
  const auto bwd = kernels_of(w, block, "mlp.fc1", true);
  ASSERT_EQ(bwd.size(), 2u);  // data and weight gradients
  const TensorRef weight = bound(fwd[0].second, "b").tensor;
  EXPECT_EQ(weight.role, TensorRole::kWeight);
  EXPECT_EQ(weight.layer, 2u);
  EXPECT_EQ(bound(fwd[0].second, "a").tensor, output_of(w, block, "mlp.norm"));
  EXPECT_EQ(bound(bwd[0].second, "b").tensor, weight);  // dX = dY W
  // dW = dY^T X: the weight gradient, from the output's gradient and the saved input.
  EXPECT_EQ(bound(bwd[1].second, "c").tensor.role, TensorRole::kWeightGrad);
  EXPECT_EQ(bound(bwd[1].second, "c").tensor.op, weight.op);
  EXPECT_EQ(bound(bwd[1].second, "a").tensor.role, TensorRole::kOutputGrad);
  EXPECT_EQ(bound(bwd[1].second, "b").tensor, output_of(w, block, "mlp.norm"));
}

// The first layer reads the model's input; its data gradient, which the step computes
// (the lowering runs every GEMM's two backward kernels), goes to that input's gradient.
TEST(OperandBinding, TheFirstLayerReadsTheModelsInput) {
  ModelSpec s = find_model_preset("mlp-mnist")->spec;
  const Workload w = build_workload(s, WorkloadShape{2, 0, Precision::kFp32, false});
  const auto fwd = kernels_of(w, 0, w.layers[0].ops[0].name, false);
  EXPECT_EQ(bound(fwd[0].second, "a").tensor, (TensorRef{TensorRole::kOutput, kModelInput, 0}));
  const auto bwd = kernels_of(w, 0, w.layers[0].ops[0].name, true);
  EXPECT_EQ(bound(bwd[0].second, "c").tensor, (TensorRef{TensorRole::kOutputGrad, kModelInput, 0}));
}

// Positions and token types are looked up and added into the tokens' embedding: they
// write that tensor, and read its gradient.
TEST(OperandBinding, LookupsAfterTheTokensAddIntoTheirEmbedding) {
  const Workload w =
      build_workload(tiny("bert-base", 1), WorkloadShape{2, 32, Precision::kFp32, false});
  const TensorRef tokens = output_of(w, 0, "embed.tokens");
  for (const char* lookup : {"embed.positions", "embed.token_types"}) {
    EXPECT_EQ(bound(kernels_of(w, 0, lookup, false)[0].second, "y").tensor, tokens) << lookup;
    EXPECT_EQ(bound(kernels_of(w, 0, lookup, true)[0].second, "dy").tensor,
              (TensorRef{TensorRole::kOutputGrad, tokens.layer, tokens.op}))
        << lookup;
  }
  EXPECT_EQ(bound(kernels_of(w, 0, "embed.norm", false)[0].second, "x").tensor, tokens);
}

}  // namespace
}  // namespace dtsim::models
