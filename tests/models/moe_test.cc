// Fine-grained mixture of experts, worked by hand: the layer layout, grouped GEMMs, the
// routing's saved tensors, expert parallelism and routing imbalance on a rank, tile
// quantization of grouped GEMMs, and Megatron-LM's recompute modules.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "models/chunk_cost.h"
#include "models/cost_model.h"
#include "models/memory_model.h"
#include "models/training.h"
#include "models/workload.h"
#include "sim/device_catalog.h"

namespace dtsim::models {
namespace {

// Three layers, the first dense; 16 experts of 96 (top 4) and a gated shared expert of 192
// in the others. Two samples of 128 tokens: 256 tokens, 1,024 routed rows.
constexpr double kTokens = 256;
constexpr double kRouted = 1024;
constexpr double kH = 256;
constexpr double kFe = 96;
constexpr double kFs = 192;
constexpr double kE = 16;

ModelSpec fine_grained() {
  ModelSpec s;
  s.name = "fine-grained";
  s.family = ModelFamily::kMoe;
  s.layers = 3;
  s.hidden = 256;
  s.heads = 4;
  s.kv_heads = 2;
  s.ffn_hidden = 512;
  s.vocab = 1000;
  s.experts = 16;
  s.top_k = 4;
  s.moe_ffn_hidden = 96;
  s.shared_ffn_hidden = 192;
  s.shared_expert_gate = true;
  s.first_dense_layers = 1;
  return s;
}

Workload workload(const ModelSpec& spec = fine_grained()) {
  return build_workload(spec, WorkloadShape{2, 128, Precision::kBf16, true});
}

const Layer& layer(const Workload& w, std::string_view name) {
  for (const Layer& l : w.layers) {
    if (l.name == name) return l;
  }
  throw std::runtime_error("no layer " + std::string(name));
}

const Op* find(const Layer& l, std::string_view name) {
  for (const Op& op : l.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

double saved(const Layer& l, std::string_view prefix) {
  double bytes = 0;
  for (const Op& op : l.ops) {
    if (op.name.starts_with(prefix)) bytes += op.saved_bytes;
  }
  return bytes;
}

const DeviceSpec& h100() { return *find_builtin_device("H100"); }

TEST(Moe, DenseLayersFirstAndOnAPeriod) {
  const Workload w = workload();
  EXPECT_NE(find(layer(w, "block.0"), "mlp.gate"), nullptr);
  EXPECT_EQ(find(layer(w, "block.0"), "moe.router"), nullptr);
  EXPECT_EQ(layer(w, "block.0").ep_at.size(), 0u);
  for (const char* name : {"block.1", "block.2"}) {
    EXPECT_NE(find(layer(w, name), "moe.router"), nullptr) << name;
    EXPECT_EQ(find(layer(w, name), "mlp.gate"), nullptr) << name;
  }
  // The dense layer's MLP is ffn_hidden wide, the experts moe_ffn_hidden.
  EXPECT_EQ(find(layer(w, "block.0"), "mlp.gate")->gemm.n, 512);
  ModelSpec period = fine_grained();
  period.first_dense_layers = 0;
  period.moe_layer_period = 2;  // layer i is MoE when i + 1 is even
  const Workload p = workload(period);
  EXPECT_EQ(find(layer(p, "block.0"), "moe.router"), nullptr);
  EXPECT_NE(find(layer(p, "block.1"), "moe.router"), nullptr);
  EXPECT_EQ(find(layer(p, "block.2"), "moe.router"), nullptr);
  period.first_dense_layers = 3;
  EXPECT_FALSE(validate_model_spec(period).empty());
}

TEST(Moe, GroupedGemmsOverTheExperts) {
  const Workload w = workload();
  const Layer& l = layer(w, "block.1");
  const Op& fc1 = *find(l, "moe.expert.fc1");
  const Op& fc2 = *find(l, "moe.expert.fc2");
  // One kernel over the 16 experts, each 1,024 / 16 = 64 rows; fc1 gate and up side by side.
  EXPECT_EQ(fc1.kernel, KernelKind::kGroupedGemm);
  EXPECT_EQ(fc1.gemm, (GemmDims{64, 192, 256, 16, false, true}));
  EXPECT_EQ(fc2.gemm, (GemmDims{64, 256, 96, 16, false, true}));
  EXPECT_DOUBLE_EQ(fc1.fwd_flops, 2 * kRouted * kH * 2 * kFe);
  EXPECT_DOUBLE_EQ(fc2.fwd_flops, 2 * kRouted * kFe * kH);
  EXPECT_EQ(fc1.params + fc2.params, static_cast<int64_t>(kE * 3 * kH * kFe));
  int grouped = 0;
  for (const Op& op : l.ops) grouped += op.kernel == KernelKind::kGroupedGemm ? 1 : 0;
  EXPECT_EQ(grouped, 2);
  // Shared expert: a dense SwiGLU of 192 and its one-row gate; router 256 x 16.
  double shared = 0;
  for (const Op& op : l.ops) {
    if (op.name.starts_with("moe.shared.")) shared += static_cast<double>(op.params);
  }
  EXPECT_DOUBLE_EQ(shared, 3 * kH * kFs + kH);
  EXPECT_EQ(find(l, "moe.router")->params, 256 * 16);
  // Dispatch and combine: every routed row of h, 2 bytes each.
  EXPECT_DOUBLE_EQ(l.moe_all_to_all_bytes, kRouted * kH * 2);
  EXPECT_DOUBLE_EQ(find(l, "moe.permute")->fwd_bytes, 2 * kRouted * kH * 2);
}

// docs/training.md, "Mixture of experts": what an MoE layer keeps, term by term.
TEST(Moe, SavedTensorsOfAnMoeLayer) {
  const Workload w = workload();
  const Layer& l = layer(w, "block.1");
  EXPECT_DOUBLE_EQ(find(l, "moe.router")->saved_bytes, 2 * kTokens * kH);
  // int32 routing indices and the fp32 probabilities over every expert.
  EXPECT_DOUBLE_EQ(find(l, "moe.permute")->saved_bytes, 4 * kRouted + 4 * kTokens * kE);
  EXPECT_DOUBLE_EQ(find(l, "moe.expert.fc1")->saved_bytes, 2 * kRouted * kH);
  EXPECT_DOUBLE_EQ(find(l, "moe.expert.swiglu")->saved_bytes, 2 * 2 * kRouted * kFe);
  EXPECT_DOUBLE_EQ(find(l, "moe.expert.fc2")->saved_bytes, 2 * kRouted * kFe);
  EXPECT_DOUBLE_EQ(find(l, "moe.unpermute")->saved_bytes, 0);
  EXPECT_DOUBLE_EQ(find(l, "moe.combine")->saved_bytes, 2 * kRouted * kH);
  // The shared expert reads the router's input, kept once; its gate's output and its own
  // output are kept for the scale.
  EXPECT_DOUBLE_EQ(saved(l, "moe.shared."),
                   2 * 2 * kTokens * kFs + 2 * kTokens * kFs + 2 * kTokens + 2 * kTokens * kH);
  EXPECT_DOUBLE_EQ(saved(l, "moe."), 2216448);  // the sum above
}

// A rank of expert-parallel group 4 runs 4 of the 16 experts on the rows the group sends
// them: 64 x 4 = 256 a group; with the busiest rank getting 1.5 times the mean, 384.
TEST(Moe, ExpertParallelShardAndRoutingImbalance) {
  const Workload w = workload();
  const int block = 2;  // block.1
  RankShard shard;
  shard.ep = 4;
  shard.expert_load = 1.5;
  const RooflineCostModel costs;
  const ChunkCost cc = chunk_cost(w, block, block + 1, shard, Recompute::kNone, h100(), costs);
  const PricedOp* fc1 = nullptr;
  for (const PricedOp& p : cc.layer_fwd_ops[0]) {
    if (p.op.name == "moe.expert.fc1") fc1 = &p;
  }
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->op.gemm.batch, 4);
  EXPECT_EQ(fc1->op.gemm.m, 384);
  EXPECT_DOUBLE_EQ(fc1->op.flops, 2 * kRouted * kH * 2 * kFe * 1.5);
  // Only the rank's four experts' weights are read.
  EXPECT_DOUBLE_EQ(fc1->op.bytes, 4 * (384 * 256 + 256 * 192 + 384 * 192) * 2.0);
  double a2a = 0;
  for (const PassComm& c : cc.layer_fwd_comms[0]) {
    if (c.kind == PassComm::Kind::kEp) a2a += c.bytes;
  }
  EXPECT_DOUBLE_EQ(a2a, 2 * kRouted * kH * 2 * 1.5);  // dispatch and combine
  // The experts' saved tensors hold the busiest rank's rows.
  const double experts_saved = 2 * kRouted * kH + 2 * 2 * kRouted * kFe + 2 * kRouted * kFe;
  const double even = layer_activation_bytes(w.layers[block], 0, Recompute::kNone, {});
  const double busy =
      layer_activation_bytes(w.layers[block], 0, Recompute::kNone, {1, false, 1, 1.5});
  EXPECT_DOUBLE_EQ(busy - even, 0.5 * experts_saved);
  EXPECT_DOUBLE_EQ(cc.expert_params, kE / 4 * 3 * kH * kFe);
}

// Expert tensor parallelism, worked by hand on block.1 (16 experts of 96, 1,024 routed rows
// of 256 tokens), a rank of tp 2 under sequence parallelism, ep 4:
// - etp 2 (= tp, Megatron's default): the rank dispatches its sequence shard's 512 routed
//   rows; the expert-tensor-parallel gather joins both shards, so its 4 experts run all
//   1,024 rows on half their widths (fc1 96 of 192 columns);
// - etp 1 (MoE parallel folding): no gather; the experts run the 512 rows the group sends
//   the rank on their whole widths, and the rank holds its experts' weights whole.
TEST(Moe, ExpertTensorParallelism) {
  const Workload w = workload();
  const int block = 2;  // block.1
  const RooflineCostModel costs;
  RankShard shard;
  shard.tp = 2;
  shard.tp_share = 0.5;
  shard.sequence_parallel = true;
  shard.ep = 4;
  const auto fc1_of = [&](const ChunkCost& cc) {
    for (const PricedOp& p : cc.layer_fwd_ops[0]) {
      if (p.op.name == "moe.expert.fc1") return p.op;
    }
    throw std::runtime_error("no fc1");
  };
  const auto comms = [](const ChunkCost& cc, PassComm::Kind kind) {
    std::vector<double> out;
    for (const PassComm& c : cc.layer_fwd_comms[0]) {
      if (c.kind == kind) out.push_back(c.bytes);
    }
    return out;
  };
  const double shard_bytes = kRouted / 2 * kH * 2;  // a sequence shard's routed rows

  const ChunkCost folded_tp =
      chunk_cost(w, block, block + 1, shard, Recompute::kNone, h100(), costs);
  const OpSignature split = fc1_of(folded_tp);
  EXPECT_EQ(split.gemm, (GemmDims{256, 96, 256, 4, false, true}));
  EXPECT_DOUBLE_EQ(split.flops, 2 * kRouted * kH * 2 * kFe / 2);
  EXPECT_EQ(comms(folded_tp, PassComm::Kind::kEp), (std::vector<double>{shard_bytes, shard_bytes}));
  EXPECT_EQ(comms(folded_tp, PassComm::Kind::kEtpGather), (std::vector<double>{2 * shard_bytes}));
  EXPECT_EQ(comms(folded_tp, PassComm::Kind::kEtpScatter), (std::vector<double>{2 * shard_bytes}));
  // Dispatch, gather, experts, scatter, combine: in that order.
  std::vector<PassComm::Kind> order;
  for (const PassComm& c : folded_tp.layer_fwd_comms[0]) {
    if (c.kind != PassComm::Kind::kTp && c.kind != PassComm::Kind::kCp) order.push_back(c.kind);
  }
  EXPECT_EQ(order, (std::vector<PassComm::Kind>{PassComm::Kind::kEp, PassComm::Kind::kEtpGather,
                                                PassComm::Kind::kEtpScatter, PassComm::Kind::kEp}));
  // In the backward pass the gradients come back through the combine first.
  order.clear();
  for (const PassComm& c : folded_tp.layer_bwd_comms[0]) {
    if (c.kind != PassComm::Kind::kTp && c.kind != PassComm::Kind::kCp) order.push_back(c.kind);
  }
  EXPECT_EQ(order, (std::vector<PassComm::Kind>{PassComm::Kind::kEp, PassComm::Kind::kEtpGather,
                                                PassComm::Kind::kEtpScatter, PassComm::Kind::kEp}));
  EXPECT_DOUBLE_EQ(folded_tp.expert_params, kE / 4 * 3 * kH * kFe / 2);
  // The fixture's shared expert is a tensor-parallel MLP: its exchange stays beside the
  // attention's, two per pass (an MoE layer without one has only the attention's).
  EXPECT_EQ(comms(folded_tp, PassComm::Kind::kTp).size(), 2u);
  ModelSpec plain = fine_grained();
  plain.shared_ffn_hidden = 0;
  plain.shared_expert_gate = false;
  EXPECT_EQ(layer(workload(plain), "block.1").tp_fwd_at.size(), 1u);
  EXPECT_EQ(layer(workload(plain), "block.0").tp_fwd_at.size(), 2u);

  shard.etp = 1;
  const ChunkCost folded = chunk_cost(w, block, block + 1, shard, Recompute::kNone, h100(), costs);
  const OpSignature whole = fc1_of(folded);
  EXPECT_EQ(whole.gemm, (GemmDims{128, 192, 256, 4, false, true}));
  EXPECT_DOUBLE_EQ(whole.flops, 2 * kRouted / 2 * kH * 2 * kFe);
  EXPECT_EQ(comms(folded, PassComm::Kind::kEp), (std::vector<double>{shard_bytes, shard_bytes}));
  EXPECT_TRUE(comms(folded, PassComm::Kind::kEtpGather).empty());
  EXPECT_DOUBLE_EQ(folded.expert_params, kE / 4 * 3 * kH * kFe);
  // Saved expert tensors: fc1's input (512 rows of h), the SwiGLU's inputs and fc2's input
  // (512 rows of 2 x 96 and of 96), where etp 2 keeps 1,024 rows of half those widths.
  const double even = layer_activation_bytes(w.layers[block], 0, Recompute::kNone,
                                             ActivationSplit{2, true, 1, 1, 2, 1});
  const double fold = layer_activation_bytes(w.layers[block], 0, Recompute::kNone,
                                             ActivationSplit{2, true, 1, 1, 1, 0.5});
  EXPECT_DOUBLE_EQ(even - fold, 2 * kRouted * kH - 2 * kRouted / 2 * kH);
}

// The busiest rank's load: none at ep 1 (one rank runs every expert on every routed row),
// at most ep, capped by a capacity factor.
TEST(Moe, ExpertLoadOfTheBusiestRank) {
  TrainingSetup t;
  t.expert_load_imbalance = 1.5;
  EXPECT_DOUBLE_EQ(t.expert_load(1), 1);
  EXPECT_DOUBLE_EQ(t.expert_load(8), 1.5);
  t.expert_load_imbalance = 3;
  EXPECT_DOUBLE_EQ(t.expert_load(2), 2);
  t.expert_capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(t.expert_load(8), 1.25);
}

// A grouped kernel runs every group with one tile shape: 100 rows on 256-row tiles fill
// 100 / 256 of a tile row, where a batched GEMM's shape is priced by its size terms alone.
TEST(Moe, GroupedGemmTileQuantization) {
  DeviceSpec d = h100();
  const GemmDims shape{100, 256, 256, 8, false, true};
  const double batched =
      RooflineCostModel::gemm_efficiency(shape, d, KernelKind::kBatchedGemm, false, DType::kBf16);
  const double grouped =
      RooflineCostModel::gemm_efficiency(shape, d, KernelKind::kGroupedGemm, false, DType::kBf16);
  EXPECT_DOUBLE_EQ(grouped / batched, 100.0 / 256.0);
  // The weight gradient reduces over the rows: its m is a weight dimension, not rows.
  EXPECT_DOUBLE_EQ(RooflineCostModel::gemm_efficiency(shape, d, KernelKind::kGroupedGemm, false,
                                                      DType::kBf16, OpPass::kBackwardWeight),
                   batched);
  GemmDims full = shape;
  full.m = 512;
  EXPECT_DOUBLE_EQ(
      RooflineCostModel::gemm_efficiency(full, d, KernelKind::kGroupedGemm, false, DType::kBf16),
      RooflineCostModel::gemm_efficiency(full, d, KernelKind::kBatchedGemm, false, DType::kBf16));
}

int recomputed(const PricedOps& ops, std::string_view name) {
  int n = 0;
  for (const PricedOp& p : ops) n += p.op.recomputed && p.op.name == name ? 1 : 0;
  return n;
}

int recomputed_all_to_alls(const std::vector<PassComm>& comms) {
  int n = 0;
  for (const PassComm& c : comms) n += c.kind == PassComm::Kind::kEp && c.recomputed ? 1 : 0;
  return n;
}

// Megatron-LM's --recompute-modules on an MoE layer: each drops what it rebuilds and
// reruns its forward in the backward pass.
TEST(Moe, RecomputeModules) {
  const Workload w = workload();
  const Layer& l = w.layers[2];  // block.1
  const auto kept = [&](RecomputeModules modules) {
    return layer_activation_bytes(l, 0, RecomputePolicy{Recompute::kSelective, modules}, {});
  };
  const double none = layer_activation_bytes(l, 0, Recompute::kNone, {});
  const double attn_core = none - kept(module_bit(RecomputeModule::kCoreAttn));
  // FlashAttention keeps only its fp32 log-sum-exp: 4 heads x 256 tokens x 4 bytes.
  EXPECT_DOUBLE_EQ(attn_core, 4 * kTokens * 4);
  // moe_act: fc2's input, the SwiGLU's output.
  EXPECT_DOUBLE_EQ(none - kept(module_bit(RecomputeModule::kMoeAct)), 2 * kRouted * kFe);
  // layernorm: the QKV input and the router's input (both norm outputs).
  EXPECT_DOUBLE_EQ(none - kept(module_bit(RecomputeModule::kLayernorm)), 2 * 2 * kTokens * kH);
  // moe: everything of the MoE layer but its input, the shared expert's included.
  EXPECT_DOUBLE_EQ(none - kept(module_bit(RecomputeModule::kMoe)), 2216448 - 2 * kTokens * kH);
  // shared_experts: the shared expert's own tensors.
  EXPECT_DOUBLE_EQ(none - kept(module_bit(RecomputeModule::kSharedExperts)),
                   saved(l, "moe.shared."));

  RankShard shard;
  shard.ep = 4;
  const RooflineCostModel costs;
  const auto backward = [&](RecomputePolicy policy) {
    return chunk_cost(w, 2, 3, shard, policy, h100(), costs);
  };
  const ChunkCost act = backward({Recompute::kSelective, module_bit(RecomputeModule::kMoeAct)});
  EXPECT_EQ(recomputed(act.layer_bwd_ops[0], "moe.expert.swiglu"), 1);
  EXPECT_EQ(recomputed(act.layer_bwd_ops[0], "moe.expert.fc2"), 0);
  EXPECT_EQ(recomputed_all_to_alls(act.layer_bwd_comms[0]), 0);
  // A checkpointed MoE layer runs its dispatch and combine again; so does full recompute.
  const ChunkCost moe = backward({Recompute::kSelective, module_bit(RecomputeModule::kMoe)});
  EXPECT_EQ(recomputed(moe.layer_bwd_ops[0], "moe.expert.fc1"), 1);
  EXPECT_EQ(recomputed(moe.layer_bwd_ops[0], "attn.qkv"), 0);
  EXPECT_EQ(recomputed_all_to_alls(moe.layer_bwd_comms[0]), 2);
  EXPECT_DOUBLE_EQ(moe.all_to_all_bytes_bwd, 2 * moe.all_to_all_bytes);
  EXPECT_EQ(recomputed_all_to_alls(backward(Recompute::kFull).layer_bwd_comms[0]), 2);
  // Context parallelism: the rerun attention core reads keys and values gathered again.
  RankShard cp2;
  cp2.cp = 2;
  const ChunkCost core = chunk_cost(w, 2, 3, cp2, Recompute::kSelective, h100(), costs);
  int cp_reruns = 0;
  for (const PassComm& c : core.layer_bwd_comms[0]) {
    cp_reruns += c.kind == PassComm::Kind::kCp && c.recomputed ? 1 : 0;
  }
  EXPECT_EQ(cp_reruns, 1);
  EXPECT_GT(core.kv_bytes_rerun, 0);
  EXPECT_EQ(chunk_cost(w, 2, 3, cp2, Recompute::kNone, h100(), costs).kv_bytes_rerun, 0);
  const ChunkCost norms =
      backward({Recompute::kSelective, module_bit(RecomputeModule::kLayernorm)});
  EXPECT_EQ(recomputed(norms.layer_bwd_ops[0], "attn.norm"), 1);
  EXPECT_EQ(recomputed(norms.layer_bwd_ops[0], "mlp.norm"), 1);
}

}  // namespace
}  // namespace dtsim::models
