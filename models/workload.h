// The workload graph: a model's layers as ops with shapes, FLOPs, bytes and parameters,
// for one micro-batch. Parallel plans split it; the cost model prices its ops.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_spec.h"
#include "models/precision.h"
#include "models/recompute.h"
#include "sim/op_signature.h"

namespace dtsim::models {

enum class OpKind { kMatmul, kAttention, kConv, kElementwise, kNorm, kSoftmax, kEmbedding, kPool,
                    kLoss, kRouter };
std::string_view op_kind_name(OpKind k);

// How an op divides over a tensor-parallel group (Megatron-LM's column/row splits).
enum class TensorSplit {
  kReplicated,  // each TP rank computes the whole op (LayerNorm, dropout, residual)
  kSequence,    // replicated unless sequence parallelism splits it along the sequence
  kColumn,      // output features split: gemm.n / tp (QKV, FC1, gate/up)
  kRow,         // input features split: gemm.k / tp (attention projection, FC2, down)
  kHeads,       // attention core: heads / tp
  kVocab,       // embedding, LM head, classifier, their softmax: vocabulary or classes / tp
};
std::string_view tensor_split_name(TensorSplit s);

// A GEMM C[m, n] = op(A)[m, k] op(B)[k, n], `batch` times (attention scores: batch = b *
// heads), as the signature holds it (sim/op_signature.h). Convolutions are their implicit
// GEMM: m = batch * out_h * out_w, n = out_channels, k = in_channels * kernel_h * kernel_w.
// Linear layers' and convolutions' weights, and the keys of QK^T, are B stored [n, k]
// (transpose_b).
using GemmShape = GemmDims;

struct Op {
  std::string name;  // "attn.qkv", "mlp.fc1", "conv2_1.a"
  OpKind kind = OpKind::kElementwise;
  KernelKind kernel = KernelKind::kElementwise;  // the kernel that runs it
  TensorSplit split = TensorSplit::kReplicated;
  GemmShape gemm;    // matmul, attention, conv: the whole (unsplit) op
  ConvDims conv;     // conv: the whole op's convolution
  AttentionDims attention;  // FlashAttention: the whole op's heads and lengths
  bool causal = false;      // attention masks the keys after each query
  // Memory-bound ops: `rows` x `width` elements, the whole op. Tensor parallelism splits
  // the rows of kHeads and kSequence ops (their rows count heads or tokens) and the width
  // of the others; context parallelism splits the rows (tokens).
  int64_t rows = 0;
  int64_t width = 0;
  // For the whole op and one micro-batch:
  double fwd_flops = 0;
  double bwd_flops = 0;   // input gradient plus weight gradient
  double fwd_bytes = 0;   // HBM traffic of the forward kernels (read + write)
  double bwd_bytes = 0;
  int64_t params = 0;     // weights and biases it owns
  double saved_bytes = 0; // activations kept for the backward pass
  // How saved_bytes divide over the TP group; it can differ from `split` (the replicated
  // input of a column-parallel GEMM is kSequence: only sequence parallelism divides it).
  TensorSplit saved_split = TensorSplit::kReplicated;
  // Part of the attention core (QK^T, softmax, dropout, attention over V): selective
  // recomputation drops its saved_bytes and runs its forward again in the backward pass
  // (Korthikanti et al. 2022).
  bool attention_core = false;
  // Selective recomputation by module (models/recompute.h): the modules whose recomputation
  // runs this op's forward again in the backward pass, and those that drop its saved_bytes
  // (a module keeps its input: a norm's output that the next op saves is dropped by
  // layernorm, the input a checkpointed MLP starts from is not). rerun_by() and
  // dropped_by() add core_attn to the attention core's ops.
  RecomputeModules rerun_in = 0;
  RecomputeModules dropped_in = 0;
  RecomputeModules rerun_by() const { return rerun_in | core_attn(); }
  RecomputeModules dropped_by() const { return dropped_in | core_attn(); }
  // The share of fwd_flops and bwd_flops the kernels execute. FLOPs stay counted as the
  // model defines them (MFU's convention), while causal FlashAttention skips the blocks
  // above the diagonal.
  double executed_fraction = 1;
  // A routed MoE expert: FLOPs and params divide over the expert-parallel group.
  bool expert = false;
  // The share of its parameters a step computes gradients for and updates: a sampled
  // softmax's class centres (ModelSpec::sample_rate); 1 elsewhere.
  double updated_fraction = 1;
  // Data flow: the ops of its layer whose results its kernel reads, by index, in the order
  // the kernel takes its inputs (kLayerInput: the layer's input, which is the previous
  // layer's result). Empty: the previous op's result, or the layer's input for the first.
  std::vector<int> reads;
  static constexpr int kLayerInput = -1;

 private:
  RecomputeModules core_attn() const {
    return attention_core ? module_bit(RecomputeModule::kCoreAttn) : RecomputeModules{0};
  }
};

enum class LayerKind { kEmbedding, kTransformer, kHead, kVision, kDense, kClassifier };
std::string_view layer_kind_name(LayerKind k);

struct Layer {
  std::string name;  // "embedding", "block.12", "head", "conv3_x.1", "classifier"
  LayerKind kind = LayerKind::kDense;
  std::vector<Op> ops;
  double output_bytes = 0;  // the activation passed to the next layer (pipeline sends)
  // Where the layer's passes stop for a collective, as boundaries between its ops: boundary
  // b lies between ops b - 1 and b. A forward collective at b runs after op b - 1's
  // forward; a backward one at b after op b's backward (gradients flow the other way).
  //
  // Tensor parallelism (Megatron-LM's f and g): an all-reduce (or, with sequence
  // parallelism, a reduce-scatter + all-gather pair) of `tp_comm_bytes` at each boundary
  // of tp_fwd_at in the forward pass and of tp_bwd_at in the backward pass.
  std::vector<int> tp_fwd_at;
  std::vector<int> tp_bwd_at;
  double tp_comm_bytes = 0;
  int tp_comms_fwd() const { return static_cast<int>(tp_fwd_at.size()); }
  int tp_comms_bwd() const { return static_cast<int>(tp_bwd_at.size()); }
  // MoE: an all-to-all of the routed tokens (dispatch, then combine) at each boundary of
  // ep_at in the forward pass, and of their gradients at the same boundaries in the
  // backward pass; each moves `moe_all_to_all_bytes` in total over the expert-parallel group.
  std::vector<int> ep_at;
  double moe_all_to_all_bytes = 0;
  // Context parallelism: the attention gathers `kv_bytes` of keys and values over the CP
  // group at boundary cp_at in the forward pass and reduce-scatters their gradients there
  // in the backward pass; -1 without attention.
  int cp_at = -1;
  double kv_bytes = 0;

  int64_t params() const;
  double fwd_flops() const;
  double bwd_flops() const;
};

struct WorkloadShape {
  int64_t micro_batch = 1;  // samples
  int64_t seq_len = 0;      // tokens per sample; 0 = the model's default; images ignore it
  Precision precision = Precision::kBf16;
  // Transformers: attention as one fused kernel (FlashAttention; Dao et al. 2022) that never
  // writes the s x s scores to memory and recomputes them in its backward pass, instead of
  // batched GEMMs around a softmax (and dropout) over the scores in HBM.
  bool flash_attention = false;
};

struct Workload {
  ModelSpec spec;
  WorkloadShape shape;  // seq_len resolved
  std::vector<Layer> layers;

  int64_t params() const;
  double fwd_flops() const;
  double bwd_flops() const;
  // Tokens per sample: the sequence length for language models, 1 for images.
  int64_t tokens_per_sample() const;
};

// Throws std::invalid_argument naming the field if validate_model_spec finds problems.
Workload build_workload(const ModelSpec& spec, const WorkloadShape& shape);

// Model FLOPs of one training iteration of `samples` samples (forward + backward, no
// recomputation): the numerator of MFU. The sum over ops of fwd + bwd FLOPs, scaled from
// w.shape.micro_batch samples to `samples`.
double model_flops_per_iteration(const Workload& w, int64_t samples);

}  // namespace dtsim::models
