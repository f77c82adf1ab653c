// Per-rank memory: model states by precision and ZeRO stage, activations by recompute
// mode, and the in-flight micro-batches of a pipeline schedule.
#pragma once

#include <cstdint>

#include "models/precision.h"
#include "models/workload.h"

namespace dtsim::models {

// Parameters, gradients and optimizer states of `params` parameters held by one rank,
// sharded over `dp` ranks as ZeRO stage `zero_stage` says (0: nothing sharded; 1: optimizer
// states; 2: and gradients; 3: and parameters; FSDP full-shard is stage 3).
struct ModelStateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};
ModelStateBytes model_state_bytes(int64_t params, Precision precision, Optimizer optimizer,
                                  int zero_stage, int dp);

// How a rank splits a layer's activations.
struct ActivationSplit {
  int tp = 1;
  bool sequence_parallel = false;
  int cp = 1;  // context parallel divides the sequence
  // Experts' saved tensors hold the rows routed to the rank: the busiest rank's, over the
  // mean (RankShard::expert_load).
  double expert_load = 1;
  // Experts split their weights over etp ranks and get expert_rows of the micro-batch's
  // routed rows (RankShard::expert_rows).
  int etp = 0;  // 0 = tp
  double expert_rows = 1;
};

// Full recomputation checkpoints the blocks between the input layer and the output layer
// (Megatron-LM's --recompute-granularity full wraps the transformer layers only): a
// transformer's embedding and head, and the sharded classifier, keep their activations
// and are not run again. (An MLP's output layer is a kDense layer like its hidden ones and
// is recomputed with them.)
inline bool recomputed_by_full(LayerKind kind) {
  return kind != LayerKind::kEmbedding && kind != LayerKind::kHead &&
         kind != LayerKind::kClassifier;
}

// Activation bytes one rank keeps for one micro-batch of `layer` until its backward pass:
// the ops' saved_bytes divided as their TensorSplit says (kSequence ops only under
// sequence parallelism), with `recompute`:
//   none: everything; selective: without what its modules drop (Op::dropped_in; by
//   default the attention core); full: only the layer input
//   (output_bytes of the layer before it, given as `input_bytes`, split like kSequence).
double layer_activation_bytes(const Layer& layer, double input_bytes, RecomputePolicy recompute,
                              const ActivationSplit& split);

// Korthikanti et al. 2022, equations 1-4, per transformer layer in 16-bit: s*b*h*(34 +
// 5*a*s/h) without parallelism; with tensor parallelism t, s*b*h*(10 + 24/t + 5*a*s/(h*t));
// with sequence parallelism too, s*b*h/t*(34 + 5*a*s/h); selective recompute with
// sequence parallelism, 34*s*b*h/t. The tests check layer_activation_bytes against these.
double korthikanti_layer_activation_bytes(int64_t s, int64_t b, int64_t h, int64_t a, int tp,
                                          bool sequence_parallel, Recompute recompute);

}  // namespace dtsim::models
