// Transformer layers (GPT, LLaMA, Mixtral-style MoE, BERT) as Megatron-LM runs them: GEMM
// shapes and FLOPs of Narayanan et al. 2021 (section 5.1), saved activations of Korthikanti
// et al. 2022 (section 4.1), tensor-parallel splits of Shoeybi et al. 2019.
//
// Saved activations per block, b samples of s tokens, hidden h, a heads, 2-byte elements
// (`act` bytes in general; dropout masks are 1 byte per element):
//   gpt, bert (Korthikanti's count, 34sbh + 5as^2b):
//     two norm inputs 2sbh each                                  [kSequence]
//     QKV input 2sbh                                             [kSequence]
//     Q, K, V 6sbh (kept by attn.qkv_bias)                       [kHeads]
//     softmax output 2as^2b, its dropout mask as^2b, the dropout
//       output 2as^2b (attention core)                           [kHeads]
//     projection input 2sbh                                      [kRow]
//     two residual dropout masks sbh each                        [kSequence]
//     fc1 input 2sbh [kSequence], GeLU input 8sbh [kColumn], fc2 input 8sbh [kRow]
//   llama (no dropout; ffn hidden f, query width q = heads * head_dim, h unless head_dim
//   is given, key/value width g = kv_heads * head_dim):
//     norm inputs 2 * 2sbh, QKV input 2sbh, Q, K, V 2sb(q + 2g) (and with Qwen3's q/k norm
//     their inputs 2sb(q + g)), projection input 2sbq,
//     gate/up input 2sbh, the gate and up outputs 2 * 2sbf, down input 2sbf,
//     and the softmax output 2as^2b, which attention over V reads (attention core).
//   moe: llama's norms and attention; in an MoE layer (E experts of width f_e, r = top_k
//   routed copies of every token):
//     router input 2sbh and its fp32 probabilities 4sbE,
//     the permutation's routing indices 4rsb (int32),
//     expert input (the dispatched tokens) 2rsbh, fc1's gate and up outputs 2 * 2rsbf_e,
//     fc2's input 2rsbf_e, and the expert outputs 2rsbh that the weighted combine needs for
//     the routing weights' gradient;
//     shared experts of width f_s: llama's MLP terms with f_s but its input (the router's),
//     and Qwen2-MoE's sigmoid gate output 2sb and the shared experts' output 2sbh;
//   the dense layers among them (first_dense_layers, moe_layer_period) keep llama's MLP.
// Only the ops marked attention_core hold the s^2 terms, so selective recomputation keeps
// the rest (34sbh for gpt).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "models/zoo/zoo.h"
#include "sim/check.h"

namespace dtsim::models::zoo {
namespace {

// Forward FLOPs per element of the transformer's memory-bound ops (see zoo.h).
constexpr double kLayerNormFlops = 8;  // mean, variance (subtract, square, add), normalise, affine
constexpr double kRmsNormFlops = 4;    // square and add, scale by 1/rms, multiply by the weight
constexpr double kSoftmaxFlops = 7;    // scale, mask, max, subtract, exp, sum, divide
constexpr double kGeluFlops = 8;       // bias add and the tanh approximation
constexpr double kSwigluFlops = 5;     // gate * sigmoid(gate) (4), times up (1)
constexpr double kRopeFlops = 3;       // rotate pairs: two multiplies and an add
constexpr double kCombineFlops = 2;    // multiply by the routing weight, add
// The router's probabilities in fp32 (router.py), and int32 routing indices.
constexpr double kRouterProbBytes = 4;
constexpr double kIndexBytes = 4;
// Megatron-LM computes the cross-entropy in fp32 and keeps the fp32 softmax for its
// backward (Korthikanti et al. 2022, section 4.3: 4sbv/t bytes).
constexpr double kLossProbBytes = 4;
// The per-token loss the head hands on, in fp32.
constexpr double kLossOutputBytes = 4;
// BERT's segment (token type) embedding has two rows: sentence A and sentence B.
constexpr int64_t kBertTokenTypes = 2;
// BERT's next-sentence prediction: is-next or not.
constexpr int64_t kBertNspClasses = 2;

struct Dims {
  ModelFamily family = ModelFamily::kGpt;
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t tokens = 0;  // batch * seq: the rows of every token-wise GEMM
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t head_dim = 0;
  int64_t q_width = 0;   // heads * head_dim: Q's width and the attention output's
  int64_t kv_width = 0;  // kv_heads * head_dim: the K and V projections' outputs
  bool qk_norm = false;
  int64_t ffn = 0;
  int64_t vocab = 0;
  int64_t positions = 0;  // rows of the learned position table (gpt, bert)
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t expert_ffn = 0;  // each expert's feed-forward width
  int64_t shared_ffn = 0;  // the shared experts' SwiGLU width; 0 = none
  bool shared_gate = false;
  bool tied = false;
  bool sinks = false;  // GPT-OSS's attention sinks
  double act = 2;
  // gpt and bert: LayerNorm, biases, dropout, GeLU, learned positions; llama and moe:
  // RMSNorm, no biases, no dropout, SwiGLU, rotary positions.
  bool gpt_style = true;
  bool flash = false;
  int64_t window = 0;  // sliding-window attention's reach; 0 = the whole prefix
  // Multi-head latent attention (kv_lora > 0): head_dim is then QK^T's (nope + rope) and
  // v_dim V's; q_width and kv_width are Q's and K's widths over every head.
  int64_t q_lora = 0;
  int64_t kv_lora = 0;
  int64_t rope_dim = 0;
  int64_t v_dim = 0;
  bool mla() const { return kv_lora > 0; }

  double token_elements() const { return static_cast<double>(tokens) * hidden; }
  double score_elements() const { return static_cast<double>(batch) * heads * seq * seq; }
};

Dims dims_of(const ModelSpec& spec, const BuildShape& shape) {
  Dims d;
  d.family = spec.family;
  d.batch = shape.batch;
  d.seq = shape.seq_len;
  d.tokens = shape.batch * shape.seq_len;
  d.hidden = spec.hidden;
  d.heads = spec.heads;
  d.head_dim = spec.head_dim();
  d.q_width = spec.q_width();
  d.kv_width = spec.kv_heads_or_heads() * spec.head_dim();
  d.qk_norm = spec.qk_norm;
  d.gpt_style = spec.family == ModelFamily::kGpt || spec.family == ModelFamily::kBert;
  d.ffn = spec.ffn_hidden > 0 ? spec.ffn_hidden : 4 * spec.hidden;
  d.vocab = spec.vocab;
  d.positions = spec.seq_len > 0 ? spec.seq_len : shape.seq_len;
  d.experts = spec.experts;
  d.top_k = spec.top_k;
  d.expert_ffn = spec.expert_ffn();
  d.shared_ffn = spec.shared_ffn_hidden;
  d.shared_gate = spec.shared_expert_gate;
  d.tied = spec.tied_embeddings;
  d.act = shape.act_bytes;
  d.flash = shape.flash_attention;
  d.window = spec.sliding_window;
  d.sinks = spec.attention_sinks;
  if (spec.mla()) {
    d.q_lora = spec.q_lora_rank;
    d.kv_lora = spec.kv_lora_rank;
    d.rope_dim = spec.qk_rope_head_dim;
    d.v_dim = spec.v_head_dim;
    d.head_dim = spec.qk_nope_head_dim + spec.qk_rope_head_dim;
    d.q_width = d.heads * d.head_dim;
    d.kv_width = d.q_width;
  }
  return d;
}

// A norm over rows of `width` (0: the hidden size) of every token; it keeps its input.
void add_norm(std::vector<Op>& ops, const Dims& d, std::string name, int64_t width = 0) {
  if (width == 0) width = d.hidden;
  const double elements = static_cast<double>(d.tokens) * static_cast<double>(width);
  Op norm = run_by(memory_bound_op(std::move(name), OpKind::kNorm, TensorSplit::kSequence, elements,
                                   d.gpt_style ? kLayerNormFlops : kRmsNormFlops, 2 * d.act, width),
                   d.gpt_style ? KernelKind::kLayerNorm : KernelKind::kRmsNorm);
  norm.params = d.gpt_style ? 2 * width : width;  // LayerNorm has a bias, RMSNorm not
  ops.push_back(saving(std::move(norm), elements * d.act, TensorSplit::kSequence));
}

// Q, K and V as the core attention reads them. GPT and BERT add the QKV bias here
// (Megatron-LM's column-parallel linear adds it after the GEMM); LLaMA rotates Q and K. The
// op keeps Q, K and V for the backward pass: they are the core attention's inputs, which
// selective recomputation keeps too, since it reruns the core from them.
Op qkv_preparation(const Dims& d) {
  const double qkv_elements = static_cast<double>(d.tokens) * (d.q_width + 2 * d.kv_width);
  // Rows of one head's width: tensor parallelism splits them by heads.
  Op op = d.gpt_style ? memory_bound_op("attn.qkv_bias", OpKind::kElementwise, TensorSplit::kHeads,
                                        qkv_elements, kAddFlops, 2 * d.act, d.head_dim)
                      : memory_bound_op("attn.rope", OpKind::kElementwise, TensorSplit::kHeads,
                                        static_cast<double>(d.tokens) * (d.q_width + d.kv_width),
                                        kRopeFlops, 2 * d.act, d.head_dim);
  return saving(std::move(op), qkv_elements * d.act, TensorSplit::kHeads);
}

// Qwen3's RMSNorm over every head of Q and K (weights of head_dim each), before rotary.
// It keeps its inputs for the backward pass, as the block's other norms do.
Op qk_norm_op(const Dims& d) {
  const double elements = static_cast<double>(d.tokens) * (d.q_width + d.kv_width);
  Op op = run_by(memory_bound_op("attn.qk_norm", OpKind::kNorm, TensorSplit::kHeads, elements,
                                 kRmsNormFlops, 2 * d.act, d.head_dim),
                 KernelKind::kRmsNorm);
  op.params = 2 * d.head_dim;
  return saving(std::move(op), elements * d.act, TensorSplit::kHeads);
}

// Part of the attention core, which selective recomputation's core_attn reruns.
Op attention_core_op(Op op) {
  op.attention_core = true;
  return op;
}

// A batched GEMM of the attention core: no weights, and a backward of two GEMMs of the
// forward's size (gradients of both operands).
Op attention_gemm(std::string name, const GemmShape& gemm, double act) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kAttention;
  op.kernel = KernelKind::kBatchedGemm;
  op.split = TensorSplit::kHeads;
  op.gemm = gemm;
  op.saved_split = TensorSplit::kHeads;
  op = attention_core_op(std::move(op));
  op.fwd_flops = gemm.flops();
  op.bwd_flops = 2 * op.fwd_flops;
  const double operands = static_cast<double>(gemm.m) * gemm.k +
                          static_cast<double>(gemm.k) * gemm.n +
                          static_cast<double>(gemm.m) * gemm.n;
  op.fwd_bytes = operands * static_cast<double>(gemm.batch) * act;
  op.bwd_bytes = 2 * op.fwd_bytes;
  return op;
}


// FlashAttention (Dao et al. 2022; FlashAttention-2, 2023): QK^T, softmax, dropout and
// attention over V in one kernel that keeps the scores on chip. Forward: the two GEMMs;
// backward: five of the same size (the scores recomputed, then dV, dP, dQ, dK), 2.5x the
// forward. Memory traffic is Q, K, V and O (and their gradients), linear in the sequence.
// It keeps only the softmax's log-sum-exp per row (fp32) besides O, which attn.proj
// keeps. Causal models run only the tiles on and below the diagonal: with n = ceil(s / 128)
// tiles per side (the kernels' block size), (n + 1) / (2n) of them. A sliding window of w
// tokens leaves each row of tiles at most ceil(w / 128) + 1 (the band the window touches),
// as FlashAttention-2's window_size skips the tiles wholly outside it.
Op flash_attention_op(const Dims& d, bool causal) {
  const int64_t batch = d.batch * d.heads;
  Op op =
      attention_gemm("attn.flash", GemmShape{d.seq, d.seq, d.head_dim, batch, false, true}, d.act);
  op.kernel = KernelKind::kFlashAttention;
  op.attention = AttentionDims{d.batch, d.heads, d.kv_width / d.head_dim, d.head_dim,
                               d.seq,   d.seq,   causal ? d.window : 0};
  op.causal = causal;
  op.fwd_flops *= 2;
  op.bwd_flops = 2.5 * op.fwd_flops;
  // Q and O have every head; K and V the key/value heads only (grouped-query attention).
  const double tokens = static_cast<double>(d.batch) * d.seq;
  const double qkvo = 2.0 * tokens * (d.heads * d.head_dim + d.kv_width) * d.act;
  const double lse = static_cast<double>(batch) * d.seq * 4;
  op.fwd_bytes = qkvo + lse;
  op.bwd_bytes = 2 * qkvo + lse;
  op.saved_bytes = lse;
  if (causal) {
    const auto tiles = static_cast<int64_t>(std::ceil(static_cast<double>(d.seq) / 128.0));
    const int64_t band =
        d.window > 0 ? static_cast<int64_t>(std::ceil(static_cast<double>(d.window) / 128.0)) + 1
                     : tiles;
    // Row r runs min(r + 1, band) tiles: a triangle up to the band, then full bands.
    const int64_t rising = std::min(band, tiles);
    const int64_t run = rising * (rising + 1) / 2 + (tiles - rising) * band;
    op.executed_fraction =
        static_cast<double>(run) / (static_cast<double>(tiles) * static_cast<double>(tiles));
  }
  return op;
}

// Batched GEMMs around a softmax (and dropout) whose s x s scores go through HBM, as
// Megatron-LM ran attention before FlashAttention.
void add_unfused_attention_core(std::vector<Op>& ops, const Dims& d) {
  const int64_t score_batch = d.batch * d.heads;
  // Its inputs Q and K are kept by the QKV preparation above.
  Op score = attention_gemm("attn.score",
                            GemmShape{d.seq, d.seq, d.head_dim, score_batch, false, true}, d.act);
  score.causal = d.family != ModelFamily::kBert;
  ops.push_back(std::move(score));
  const double scores = d.score_elements();
  ops.push_back(saving(
      attention_core_op(memory_bound_op("attn.softmax", OpKind::kSoftmax, TensorSplit::kHeads,
                                        scores, kSoftmaxFlops, 2 * d.act, d.seq)),
      scores * d.act, TensorSplit::kHeads));
  if (d.gpt_style) {
    ops.push_back(
        saving(attention_core_op(
                   run_by(memory_bound_op("attn.dropout", OpKind::kElementwise, TensorSplit::kHeads,
                                          scores, kDropoutFlops, 2 * d.act + kMaskBytes, d.seq),
                          KernelKind::kDropout)),
               scores * kMaskBytes, TensorSplit::kHeads));
  }
  // Attention over V keeps the dropout output; without dropout it reads the softmax
  // output, which attn.softmax keeps already. V is kept by the QKV preparation; latent
  // attention's heads of V are v_dim wide.
  const int64_t v_dim = d.mla() ? d.v_dim : d.head_dim;
  ops.push_back(
      saving(attention_gemm("attn.context", GemmShape{d.seq, v_dim, d.seq, score_batch}, d.act),
             d.gpt_style ? scores * d.act : 0, TensorSplit::kHeads));
}

void add_mla_attention(std::vector<Op>& ops, const Dims& d);

void add_attention(std::vector<Op>& ops, const Dims& d) {
  if (d.mla()) {
    add_mla_attention(ops, d);
    return;
  }
  const double tokens = static_cast<double>(d.tokens);
  ops.push_back(saving(linear("attn.qkv", TensorSplit::kColumn, d.tokens, d.hidden,
                              d.q_width + 2 * d.kv_width, d.gpt_style, d.act),
                       d.token_elements() * d.act, TensorSplit::kSequence));
  if (d.qk_norm) ops.push_back(qk_norm_op(d));
  ops.push_back(qkv_preparation(d));

  if (d.flash) {
    ops.push_back(flash_attention_op(d, d.family != ModelFamily::kBert));
  } else {
    add_unfused_attention_core(ops, d);
  }
  if (d.sinks) {
    // One learned logit a head, in the softmax's denominator (split by heads, as the core).
    for (Op& op : ops) {
      if (op.name == "attn.flash" || op.name == "attn.softmax") op.params += d.heads;
    }
  }
  ops.push_back(saving(
      linear("attn.proj", TensorSplit::kRow, d.tokens, d.q_width, d.hidden, d.gpt_style, d.act),
      tokens * d.q_width * d.act, TensorSplit::kRow));
}

// DeepSeek-V2/V3's multi-head latent attention as Megatron-Core's MLASelfAttention runs
// it (megatron/core/transformer/multi_latent_attention.py): the down projections to the
// latents are duplicated on every tensor-parallel rank (on its sequence shard under
// sequence parallelism), their norms likewise, the up projections column-parallel; rotary
// positions on Q's rope part of every head and on K's one shared part, then Q and K of
// nope + rope per head; attention over V of v_dim per head; the output projection
// row-parallel. Kept: the block's normed input (once, for both down projections), each
// latent norm's input and output (the up projection's input), Q, K and V for the core, the
// core's own, and the output projection's input.
void add_mla_attention(std::vector<Op>& ops, const Dims& d) {
  const double tokens = static_cast<double>(d.tokens);
  const int64_t v_width = d.heads * d.v_dim;
  const int64_t nope = d.head_dim - d.rope_dim;
  if (d.q_lora > 0) {
    ops.push_back(saving(
        linear("attn.q_down", TensorSplit::kSequence, d.tokens, d.hidden, d.q_lora, false, d.act),
        d.token_elements() * d.act, TensorSplit::kSequence));
    add_norm(ops, d, "attn.q_norm", d.q_lora);
    ops.push_back(saving(
        linear("attn.q_up", TensorSplit::kColumn, d.tokens, d.q_lora, d.q_width, false, d.act),
        tokens * static_cast<double>(d.q_lora) * d.act, TensorSplit::kSequence));
  } else {
    ops.push_back(
        saving(linear("attn.q", TensorSplit::kColumn, d.tokens, d.hidden, d.q_width, false, d.act),
               d.token_elements() * d.act, TensorSplit::kSequence));
  }
  // Its input, the normed hidden state, is kept by the query's first projection.
  ops.push_back(linear("attn.kv_down", TensorSplit::kSequence, d.tokens, d.hidden,
                       d.kv_lora + d.rope_dim, false, d.act));
  add_norm(ops, d, "attn.kv_norm", d.kv_lora);
  ops.push_back(saving(linear("attn.kv_up", TensorSplit::kColumn, d.tokens, d.kv_lora,
                              d.heads * (nope + d.v_dim), false, d.act),
                       tokens * static_cast<double>(d.kv_lora) * d.act, TensorSplit::kSequence));
  // Rotates Q's rope part of every head and K's shared one, and writes Q and K whole (the
  // rope part copied to every head of K); keeps Q, K and V, the core's inputs.
  Op rope = memory_bound_op("attn.rope", OpKind::kElementwise, TensorSplit::kHeads,
                            tokens * static_cast<double>(d.heads * d.rope_dim + d.rope_dim),
                            kRopeFlops, 2 * d.act, d.head_dim);
  ops.push_back(saving(std::move(rope),
                       tokens * static_cast<double>(d.q_width + d.kv_width + v_width) * d.act,
                       TensorSplit::kHeads));
  const int64_t batch = d.batch * d.heads;
  if (d.flash) {
    // One kernel of QK^T over head_dim and attention over V of v_dim (cuDNN's fused
    // attention, which Transformer Engine runs for MLA, takes the two widths apart); its
    // shape key carries head_dim.
    Op flash = flash_attention_op(d, true);
    flash.fwd_flops = 2.0 * static_cast<double>(batch) * static_cast<double>(d.seq) *
                      static_cast<double>(d.seq) * static_cast<double>(d.head_dim + d.v_dim);
    flash.bwd_flops = 2.5 * flash.fwd_flops;
    const double qkvo = tokens * static_cast<double>(d.q_width + d.kv_width + 2 * v_width) * d.act;
    const double lse = static_cast<double>(batch) * static_cast<double>(d.seq) * 4;
    flash.fwd_bytes = qkvo + lse;
    flash.bwd_bytes = 2 * qkvo + lse;
    ops.push_back(std::move(flash));
  } else {
    add_unfused_attention_core(ops, d);
  }
  ops.push_back(
      saving(linear("attn.proj", TensorSplit::kRow, d.tokens, v_width, d.hidden, false, d.act),
             tokens * static_cast<double>(v_width) * d.act, TensorSplit::kRow));
}

// The residual connection after a sublayer: Megatron-LM's fused bias-dropout-add (gpt,
// bert; it keeps the dropout mask), or a plain add (llama, moe).
void add_residual(std::vector<Op>& ops, const Dims& d, const std::string& prefix) {
  const double elements = d.token_elements();
  if (d.gpt_style) {
    ops.push_back(saving(
        memory_bound_op(prefix + ".dropout_add", OpKind::kElementwise, TensorSplit::kSequence,
                        elements, kAddFlops + kDropoutFlops + kAddFlops, 3 * d.act + kMaskBytes,
                        d.hidden),
        elements * kMaskBytes, TensorSplit::kSequence));
  } else {
    ops.push_back(memory_bound_op(prefix + ".residual", OpKind::kElementwise,
                                  TensorSplit::kSequence, elements, kAddFlops, 3 * d.act,
                                  d.hidden));
  }
}

// GPT and BERT: fc1 (column-parallel) to ffn, bias + GeLU, fc2 (row-parallel) back to h.
void add_gelu_mlp(std::vector<Op>& ops, const Dims& d) {
  const double tokens = static_cast<double>(d.tokens);
  const double ffn_elements = tokens * d.ffn;
  ops.push_back(
      saving(linear("mlp.fc1", TensorSplit::kColumn, d.tokens, d.hidden, d.ffn, true, d.act),
             d.token_elements() * d.act, TensorSplit::kSequence));
  ops.push_back(
      saving(run_by(memory_bound_op("mlp.gelu", OpKind::kElementwise, TensorSplit::kColumn,
                                    ffn_elements, kGeluFlops, 2 * d.act, d.ffn),
                    KernelKind::kGelu),
             ffn_elements * d.act, TensorSplit::kColumn));
  ops.push_back(saving(linear("mlp.fc2", TensorSplit::kRow, d.tokens, d.ffn, d.hidden, true, d.act),
                       ffn_elements * d.act, TensorSplit::kRow));
}

// The SwiGLU feed-forward of `rows` rows and width `ffn`: gate and up (column-parallel, one
// shared input), silu(gate) * up, down (row-parallel).
std::vector<Op> swiglu_ops(const Dims& d, const std::string& prefix, int64_t rows, int64_t ffn) {
  const double ffn_elements = static_cast<double>(rows) * ffn;
  std::vector<Op> ops;
  ops.push_back(
      saving(linear(prefix + ".gate", TensorSplit::kColumn, rows, d.hidden, ffn, false, d.act),
             static_cast<double>(rows) * d.hidden * d.act, TensorSplit::kSequence));
  // Reads the same input as the gate, kept once there.
  ops.push_back(linear(prefix + ".up", TensorSplit::kColumn, rows, d.hidden, ffn, false, d.act));
  ops.push_back(
      saving(run_by(memory_bound_op(prefix + ".swiglu", OpKind::kElementwise, TensorSplit::kColumn,
                                    ffn_elements, kSwigluFlops, 3 * d.act, ffn),
                    KernelKind::kSwiglu),
             2 * ffn_elements * d.act, TensorSplit::kColumn));
  ops.push_back(
      saving(linear(prefix + ".down", TensorSplit::kRow, rows, ffn, d.hidden, false, d.act),
             ffn_elements * d.act, TensorSplit::kRow));
  return ops;
}

// An expert GEMM over the routed rows: one grouped kernel over the experts (Megatron-LM's
// GroupedMLP, --moe-grouped-gemm), each group the mean rows an expert gets. It owns every
// expert's weights; FLOPs count every routed row once.
Op grouped_expert_gemm(std::string name, TensorSplit split, const Dims& d, int64_t in,
                       int64_t out) {
  const double routed = static_cast<double>(d.tokens) * d.top_k;
  const int64_t rows_per_expert =
      std::max<int64_t>(1, std::llround(routed / static_cast<double>(d.experts)));
  Op op = weighted_gemm(std::move(name), OpKind::kMatmul, split,
                        GemmShape{rows_per_expert, out, in, d.experts}, d.experts * in * out, 0,
                        routed * in, routed * out, d.act);
  op.kernel = KernelKind::kGroupedGemm;
  op.rows = d.tokens * d.top_k;  // every routed row, which expert parallelism spreads
  op.fwd_flops = 2 * routed * static_cast<double>(in) * static_cast<double>(out);
  op.bwd_flops = 2 * op.fwd_flops;
  op.expert = true;
  return op;
}

// Megatron-LM's MoE layer with the all-to-all token dispatcher (megatron/core/transformer/
// moe: router.py, token_dispatcher.py, experts.py): the router scores every expert and keeps
// the top_k; the tokens are permuted into expert order (one copy per routed expert), sent to
// the ranks that hold their experts, run through the experts' grouped GEMMs, sent back,
// unpermuted and summed with their routing weights. Shared experts run on every token
// beside them and their output is added.
void add_moe_mlp(std::vector<Op>& ops, const Dims& d) {
  const double tokens = static_cast<double>(d.tokens);
  Op router = weighted_gemm("moe.router", OpKind::kRouter, TensorSplit::kSequence,
                            GemmShape{d.tokens, d.experts, d.hidden, 1}, d.hidden * d.experts, 0,
                            d.token_elements(), tokens * d.experts, d.act);
  ops.push_back(saving(std::move(router), d.token_elements() * d.act, TensorSplit::kSequence));

  const int64_t routed = d.tokens * d.top_k;
  const double routed_elements = static_cast<double>(routed) * d.hidden;
  // A gather of every routed copy's row: reads it and writes it. The routing it carries is
  // kept: the int32 indices that unpermute and its own backward scatter by, and the
  // router's fp32 probabilities over every expert, which its softmax and top-k backward
  // read (router.py computes them in fp32).
  ops.push_back(saving(
      run_by(memory_bound_op("moe.permute", OpKind::kElementwise, TensorSplit::kSequence,
                             routed_elements, 0, 2 * d.act, d.hidden),
             KernelKind::kPermute),
      static_cast<double>(routed) * kIndexBytes + tokens * d.experts * kRouterProbBytes,
      TensorSplit::kSequence));

  // fc1 holds gate and up side by side (Megatron's gated linear unit, 2 * f_e wide).
  // Its input, the dispatched tokens, is whole on every rank of the tensor-parallel group
  // (Megatron gathers the group's tokens before the experts): sequence parallelism does
  // not divide it.
  ops.push_back(saving(grouped_expert_gemm("moe.expert.fc1", TensorSplit::kColumn, d, d.hidden,
                                           2 * d.expert_ffn),
                       routed_elements * d.act, TensorSplit::kReplicated));
  const double ffn_elements = static_cast<double>(routed) * d.expert_ffn;
  Op act = saving(run_by(memory_bound_op("moe.expert.swiglu", OpKind::kElementwise,
                                         TensorSplit::kColumn, ffn_elements, kSwigluFlops,
                                         3 * d.act, d.expert_ffn),
                         KernelKind::kSwiglu),
                  2 * ffn_elements * d.act, TensorSplit::kColumn);
  act.expert = true;
  ops.push_back(std::move(act));
  ops.push_back(saving(
      grouped_expert_gemm("moe.expert.fc2", TensorSplit::kRow, d, d.expert_ffn, d.hidden),
      ffn_elements * d.act, TensorSplit::kRow));

  ops.push_back(run_by(memory_bound_op("moe.unpermute", OpKind::kElementwise,
                                       TensorSplit::kSequence, routed_elements, 0, 2 * d.act,
                                       d.hidden),
                       KernelKind::kPermute));
  // Reads the top_k copies of a token and its weights, writes the token; keeps the expert
  // outputs for the routing weights' gradient.
  ops.push_back(saving(memory_bound_op("moe.combine", OpKind::kElementwise, TensorSplit::kSequence,
                                       routed_elements, kCombineFlops, 2 * d.act, d.hidden),
                       routed_elements * d.act, TensorSplit::kSequence));

  if (d.shared_ffn > 0) {
    // The shared experts read the router's input, kept there once.
    std::vector<Op> shared = swiglu_ops(d, "moe.shared", d.tokens, d.shared_ffn);
    shared.front().saved_bytes = 0;
    for (Op& op : shared) ops.push_back(std::move(op));
    if (d.shared_gate) {
      // Qwen2-MoE: sigmoid(x W_g) scales the shared experts' output, one weight row; the
      // scale keeps the gate's output and the shared experts' output.
      ops.push_back(linear("moe.shared.sigmoid_gate", TensorSplit::kSequence, d.tokens, d.hidden, 1,
                           false, d.act));
      ops.push_back(saving(memory_bound_op("moe.shared.scale", OpKind::kElementwise,
                                           TensorSplit::kSequence, d.token_elements(), kCombineFlops,
                                           3 * d.act, d.hidden),
                           tokens * d.act + d.token_elements() * d.act, TensorSplit::kSequence));
    }
    ops.push_back(memory_bound_op("moe.shared.add", OpKind::kElementwise, TensorSplit::kSequence,
                                  d.token_elements(), kAddFlops, 3 * d.act, d.hidden));
  }
}

void add_mlp(std::vector<Op>& ops, const Dims& d, bool moe_layer) {
  if (moe_layer) {
    add_moe_mlp(ops, d);
  } else if (d.gpt_style) {
    add_gelu_mlp(ops, d);
  } else {
    for (Op& op : swiglu_ops(d, "mlp", d.tokens, d.ffn)) ops.push_back(std::move(op));
  }
}

// Megatron-LM's --recompute-modules on a pre-norm block: the norms rerun (layernorm) and
// the ops that keep their outputs drop them; a checkpointed MLP (mlp), MoE layer (moe) or
// shared experts reruns all of its ops and keeps only its input, which its first op saves
// (the shared experts read the router's); moe_act reruns the experts' activation, whose
// output fc2 keeps.
void tag_recompute_modules(Layer& layer, bool post_norm) {
  const auto starts = [](const Op& op, std::string_view prefix) {
    return op.name.starts_with(prefix);
  };
  constexpr RecomputeModules kNorm = module_bit(RecomputeModule::kLayernorm);
  bool first_of_mlp = true;
  for (Op& op : layer.ops) {
    const bool norm = op.name == "attn.norm" || op.name == "mlp.norm";
    if (!post_norm && norm) op.rerun_in |= kNorm;
    if (!post_norm && (op.name == "attn.qkv" || op.name == "attn.q_down" || op.name == "attn.q" ||
                       op.name == "mlp.fc1" || op.name == "mlp.gate" || op.name == "moe.router")) {
      op.dropped_in |= kNorm;
    }
    RecomputeModules module = 0;
    if (starts(op, "moe.shared.")) {
      module = module_bit(RecomputeModule::kSharedExperts);
    } else if (starts(op, "moe.")) {
      module = module_bit(RecomputeModule::kMoe);
    } else if (starts(op, "mlp.") && !norm && op.name != "mlp.dropout_add" &&
               op.name != "mlp.residual") {
      module = module_bit(RecomputeModule::kMlp);
    }
    if (module == 0) continue;
    op.rerun_in |= module;
    const bool module_input = first_of_mlp && module != module_bit(RecomputeModule::kSharedExperts);
    if (!module_input) op.dropped_in |= module;
    first_of_mlp = false;
    // The shared experts run inside a checkpointed MoE layer too.
    if (module == module_bit(RecomputeModule::kSharedExperts)) {
      op.rerun_in |= module_bit(RecomputeModule::kMoe);
      op.dropped_in |= module_bit(RecomputeModule::kMoe);
    }
    if (op.name == "moe.expert.swiglu") op.rerun_in |= module_bit(RecomputeModule::kMoeAct);
    if (op.name == "moe.expert.fc2") op.dropped_in |= module_bit(RecomputeModule::kMoeAct);
  }
}

// The block's data flow where an op reads other than the op before it: the residual adds
// read their sublayer's result and the residual stream, attention over V reads V from the
// QKV tensor, and the feed-forward's branches (gate and up, router and dispatch, the
// shared experts) all read the norm before them.
void wire_block(Layer& layer, const Dims& d) {
  const bool post_norm = d.family == ModelFamily::kBert;
  const std::string attn_residual = d.gpt_style ? "attn.dropout_add" : "attn.residual";
  const std::string mlp_residual = d.gpt_style ? "mlp.dropout_add" : "mlp.residual";
  read_from(layer, attn_residual, {kPrevious, kInput});
  read_from(layer, mlp_residual, {kPrevious, post_norm ? "attn.norm" : attn_residual});
  // GPT's bias add writes Q, K and V; rotary (llama, moe) rewrites Q and K only, so the
  // attention reads V from the QKV projection's result.
  if (d.mla()) {
    // Both latents come from the normed hidden state; the rotated Q and K from the query's
    // projection and the keys' latent (its rope part), V from the keys' up projection.
    read_from(layer, "attn.kv_down", {"attn.norm"});
    read_from(layer, "attn.rope", {d.q_lora > 0 ? "attn.q_up" : "attn.q", "attn.kv_down"});
    read_from(layer, "attn.context", {kPrevious, "attn.kv_up"});
    read_from(layer, "attn.flash", {kPrevious, "attn.kv_up"});
  } else {
    read_from(layer, "attn.context", {kPrevious, d.gpt_style ? "attn.qkv_bias" : "attn.qkv"});
    if (!d.gpt_style) read_from(layer, "attn.flash", {kPrevious, "attn.qkv"});
  }
  for (const std::string prefix : {"mlp", "moe.shared"}) {
    read_from(layer, prefix + ".gate", {"mlp.norm"});
    read_from(layer, prefix + ".up", {"mlp.norm"});
    read_from(layer, prefix + ".swiglu", {prefix + ".gate", prefix + ".up"});
  }
  read_from(layer, "moe.router", {"mlp.norm"});
  read_from(layer, "moe.permute", {"mlp.norm"});
  read_from(layer, "moe.combine", {"moe.unpermute", "moe.router"});
  read_from(layer, "moe.shared.sigmoid_gate", {"mlp.norm"});
  read_from(layer, "moe.shared.scale", {"moe.shared.down", "moe.shared.sigmoid_gate"});
  read_from(layer, "moe.shared.add", {"moe.combine", kPrevious});
}

Layer block_layer(const Dims& d, int index, bool moe_layer) {
  Layer layer;
  layer.name = "block." + std::to_string(index);
  layer.kind = LayerKind::kTransformer;
  if (d.family == ModelFamily::kBert) {
    // BERT normalises after each residual (post-LN, Devlin et al. 2019).
    add_attention(layer.ops, d);
    add_residual(layer.ops, d, "attn");
    add_norm(layer.ops, d, "attn.norm");
    add_mlp(layer.ops, d, false);
    add_residual(layer.ops, d, "mlp");
    add_norm(layer.ops, d, "mlp.norm");
  } else {
    add_norm(layer.ops, d, "attn.norm");
    add_attention(layer.ops, d);
    add_residual(layer.ops, d, "attn");
    add_norm(layer.ops, d, "mlp.norm");
    add_mlp(layer.ops, d, moe_layer);
    add_residual(layer.ops, d, "mlp");
  }
  tag_recompute_modules(layer, d.family == ModelFamily::kBert);
  wire_block(layer, d);
  const double hidden_bytes = d.token_elements() * d.act;
  layer.output_bytes = hidden_bytes;
  // Megatron-LM: one all-reduce after the attention projection and one after the MLP in
  // the forward pass; their conjugates after the backward of QKV and of the MLP's first op.
  const auto& ops = layer.ops;
  const auto index_of = [&](auto&& is) {
    const auto it = std::find_if(ops.begin(), ops.end(), is);
    DTSIM_CHECK(it != ops.end(), "block layer without an expected op");
    return static_cast<int>(it - ops.begin());
  };
  // The attention's first projection (latent attention's: the query's).
  const int qkv = index_of([](const Op& op) {
    return op.name == "attn.qkv" || op.name == "attn.q_down" || op.name == "attn.q";
  });
  const int proj = index_of([](const Op& op) { return op.name == "attn.proj"; });
  const int mlp_first = index_of([](const Op& op) {
    return op.name == "mlp.fc1" || op.name == "mlp.gate" || op.kind == OpKind::kRouter;
  });
  // The MLP ends where the residual add begins.
  const int mlp_last = index_of([](const Op& op) {
                         return op.name == "mlp.dropout_add" || op.name == "mlp.residual";
                       }) -
                       1;
  layer.tp_fwd_at = {proj + 1, mlp_last + 1};
  layer.tp_bwd_at = {qkv, mlp_first};
  if (moe_layer && d.shared_ffn == 0) {
    // Megatron-Core's MoE layer routes and dispatches each rank's sequence shard (MoE with
    // tensor parallelism needs sequence parallelism): no tensor-parallel exchange around
    // it; the expert-tensor-parallel gather and scatter sit inside the dispatch (ep_at).
    // Shared experts are a tensor-parallel MLP with the usual exchange.
    layer.tp_fwd_at = {proj + 1};
    layer.tp_bwd_at = {qkv};
  }
  layer.tp_comm_bytes = hidden_bytes;
  // Keys and values are gathered once the QKV projection (and its preparation) made them.
  layer.cp_at = index_of(
      [](const Op& op) { return op.attention_core || op.kernel == KernelKind::kFlashAttention; });
  // Latent attention gathers K and V of every head (V of v_dim).
  layer.kv_bytes = static_cast<double>(d.tokens) *
                   static_cast<double>(d.kv_width + (d.mla() ? d.heads * d.v_dim : d.kv_width)) *
                   d.act;
  if (moe_layer) {
    // Tokens go to their experts once permuted and come back before they are unpermuted.
    const int fc1 = index_of([](const Op& op) { return op.name == "moe.expert.fc1"; });
    const int unpermute = index_of([](const Op& op) { return op.name == "moe.unpermute"; });
    layer.ep_at = {fc1, unpermute};
    layer.moe_all_to_all_bytes = hidden_bytes * static_cast<double>(d.top_k);
  }
  return layer;
}

// A lookup (and add) into a table of `rows` x hidden: reads a row, writes the activation.
Op embedding_lookup(std::string name, TensorSplit split, const Dims& d, int64_t rows) {
  const double elements = d.token_elements();
  Op op =
      memory_bound_op(std::move(name), OpKind::kEmbedding, split, elements, 0, 2 * d.act, d.hidden);
  op.params = rows * d.hidden;
  op.bwd_flops = elements;  // the gradient rows are added into the table's gradient
  return op;
}

Layer embedding_layer(const Dims& d) {
  Layer layer;
  layer.name = "embedding";
  layer.kind = LayerKind::kEmbedding;
  const double elements = d.token_elements();
  layer.ops.push_back(embedding_lookup("embed.tokens", TensorSplit::kVocab, d, d.vocab));
  if (d.gpt_style) {
    // Learned positions (and BERT's segments): replicated tables, added to the tokens.
    Op positions = embedding_lookup("embed.positions", TensorSplit::kReplicated, d, d.positions);
    positions.fwd_flops = elements * kAddFlops;
    positions.fwd_bytes = 3 * elements * d.act;
    layer.ops.push_back(std::move(positions));
  }
  if (d.family == ModelFamily::kBert) {
    Op segments =
        embedding_lookup("embed.token_types", TensorSplit::kReplicated, d, kBertTokenTypes);
    segments.fwd_flops = elements * kAddFlops;
    segments.fwd_bytes = 3 * elements * d.act;
    layer.ops.push_back(std::move(segments));
    add_norm(layer.ops, d, "embed.norm");
  }
  if (d.gpt_style) {
    layer.ops.push_back(
        saving(run_by(memory_bound_op("embed.dropout", OpKind::kElementwise, TensorSplit::kSequence,
                                      elements, kDropoutFlops, 2 * d.act + kMaskBytes, d.hidden),
                      KernelKind::kDropout),
               elements * kMaskBytes, TensorSplit::kSequence));
  }
  // Positions and token types are added into the tokens' embedding, which the layer's
  // next op reads.
  read_from(layer, d.family == ModelFamily::kBert ? "embed.norm" : "embed.dropout",
            {"embed.tokens"});
  layer.output_bytes = elements * d.act;
  // The vocabulary-parallel lookup sums the ranks' partial results.
  layer.tp_fwd_at = {1};
  layer.tp_comm_bytes = elements * d.act;
  return layer;
}

// Logits over the vocabulary (column-parallel over it) and the softmax cross-entropy.
void add_lm_logits_and_loss(std::vector<Op>& ops, const Dims& d, const std::string& prefix,
                            bool output_bias) {
  Op logits = linear(prefix + ".logits", TensorSplit::kVocab, d.tokens, d.hidden, d.vocab,
                     output_bias, d.act);
  if (d.tied) logits.params -= d.vocab * d.hidden;  // the token embedding's table
  ops.push_back(saving(std::move(logits), d.token_elements() * d.act, TensorSplit::kSequence));
  ops.push_back(softmax_cross_entropy(prefix + ".loss", TensorSplit::kVocab,
                                      static_cast<double>(d.tokens), static_cast<double>(d.vocab),
                                      d.act, kLossProbBytes));
}

// BERT's heads (Devlin et al. 2019): the masked-LM head (dense, GeLU, LayerNorm, logits
// with a bias) on every token, and the pooler (dense + tanh on the first token of each
// sample) with the next-sentence classifier.
void add_bert_heads(std::vector<Op>& ops, const Dims& d) {
  const double elements = d.token_elements();
  ops.push_back(saving(
      linear("head.mlm.dense", TensorSplit::kSequence, d.tokens, d.hidden, d.hidden, true, d.act),
      elements * d.act, TensorSplit::kSequence));
  ops.push_back(
      saving(run_by(memory_bound_op("head.mlm.gelu", OpKind::kElementwise, TensorSplit::kSequence,
                                    elements, kGeluFlops, 2 * d.act, d.hidden),
                    KernelKind::kGelu),
             elements * d.act, TensorSplit::kSequence));
  add_norm(ops, d, "head.mlm.norm");
  add_lm_logits_and_loss(ops, d, "head.mlm", true);

  const double first_tokens = static_cast<double>(d.batch) * d.hidden;
  ops.push_back(saving(
      linear("head.pooler", TensorSplit::kReplicated, d.batch, d.hidden, d.hidden, true, d.act),
      first_tokens * d.act, TensorSplit::kReplicated));
  // tanh costs about what GeLU's tanh approximation does.
  ops.push_back(
      saving(memory_bound_op("head.pooler.tanh", OpKind::kElementwise, TensorSplit::kReplicated,
                             first_tokens, kGeluFlops, 2 * d.act, d.hidden),
             first_tokens * d.act, TensorSplit::kReplicated));
  ops.push_back(saving(
      linear("head.nsp", TensorSplit::kReplicated, d.batch, d.hidden, kBertNspClasses, true, d.act),
      first_tokens * d.act, TensorSplit::kReplicated));
  ops.push_back(softmax_cross_entropy("head.nsp.loss", TensorSplit::kReplicated,
                                      static_cast<double>(d.batch), kBertNspClasses, d.act,
                                      kLossProbBytes));
}

Layer head_layer(const Dims& d) {
  Layer layer;
  layer.name = "head";
  layer.kind = LayerKind::kHead;
  if (d.family == ModelFamily::kBert) {
    add_bert_heads(layer.ops, d);
    // The pooler reads each sample's first token of the layer's input.
    read_from(layer, "head.pooler", {kInput});
  } else {
    add_norm(layer.ops, d, "head.norm");
    add_lm_logits_and_loss(layer.ops, d, "head", false);
  }
  layer.output_bytes = static_cast<double>(d.tokens) * kLossOutputBytes;
  // The input gradient of the column-parallel logits GEMM is summed over the group (the
  // softmax's small all-reduces of maxima and sums are left out).
  layer.tp_bwd_at = {vocab_logits(layer)};
  layer.tp_comm_bytes = d.token_elements() * d.act;
  return layer;
}

}  // namespace

std::vector<Layer> transformer_layers(const ModelSpec& spec, const BuildShape& shape) {
  const Dims d = dims_of(spec, shape);
  std::vector<Layer> layers;
  layers.reserve(static_cast<size_t>(spec.layers) + 2);
  layers.push_back(embedding_layer(d));
  for (int i = 0; i < spec.layers; ++i) {
    Dims layer = d;
    layer.window = spec.window_of(i);
    layers.push_back(block_layer(layer, i, spec.is_moe_layer(i)));
  }
  layers.push_back(head_layer(d));
  return layers;
}

}  // namespace dtsim::models::zoo
