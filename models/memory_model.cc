// Per-rank memory: model states sharded as ZeRO says (Rajbhandari et al. 2020) and
// activations by recompute mode (Korthikanti et al. 2022).
#include "models/memory_model.h"

#include <stdexcept>
#include <string>

namespace dtsim::models {

namespace {

// How many ranks the split divides a saved activation over (context parallelism aside).
int tp_divisor(TensorSplit saved_split, const ActivationSplit& split) {
  switch (saved_split) {
    case TensorSplit::kReplicated:
      return 1;
    case TensorSplit::kSequence:
      return split.sequence_parallel ? split.tp : 1;
    case TensorSplit::kColumn:
    case TensorSplit::kRow:
    case TensorSplit::kHeads:
    case TensorSplit::kVocab:
      return split.tp;
  }
  throw std::invalid_argument("unknown tensor split");
}

void validate(const ActivationSplit& split) {
  if (split.tp < 1) {
    throw std::invalid_argument("tensor parallel size must be at least 1, got " +
                                std::to_string(split.tp));
  }
  if (split.cp < 1) {
    throw std::invalid_argument("context parallel size must be at least 1, got " +
                                std::to_string(split.cp));
  }
}

}  // namespace

ModelStateBytes model_state_bytes(int64_t params, Precision precision, Optimizer optimizer,
                                  int zero_stage, int dp) {
  if (params < 0) {
    throw std::invalid_argument("parameters must be non-negative, got " + std::to_string(params));
  }
  if (zero_stage < 0 || zero_stage > 3) {
    throw std::invalid_argument("ZeRO stage must be 0, 1, 2 or 3, got " +
                                std::to_string(zero_stage));
  }
  if (dp < 1) {
    throw std::invalid_argument("data parallel size must be at least 1, got " + std::to_string(dp));
  }
  const PerParameterBytes per = per_parameter_bytes(precision, optimizer);
  const auto psi = static_cast<double>(params);
  const double nd = dp;
  // ZeRO section 5: each stage shards one more of optimizer states, gradients, weights.
  ModelStateBytes bytes;
  bytes.optimizer = per.optimizer * psi / (zero_stage >= 1 ? nd : 1.0);
  bytes.gradients = per.gradients * psi / (zero_stage >= 2 ? nd : 1.0);
  bytes.weights = per.weights * psi / (zero_stage >= 3 ? nd : 1.0);
  return bytes;
}

double layer_activation_bytes(const Layer& layer, double input_bytes, RecomputePolicy recompute,
                              const ActivationSplit& split) {
  validate(split);
  // Context parallelism splits the sequence, so every saved tensor divides by cp. The s^2
  // attention terms divide by cp only once too (a rank's s/cp queries against all s keys),
  // a fine approximation: ring attention runs with FlashAttention, which keeps none.
  if (recompute.mode == Recompute::kFull && recomputed_by_full(layer.kind)) {
    return input_bytes / tp_divisor(TensorSplit::kSequence, split) / split.cp;
  }
  double bytes = 0;
  for (const Op& op : layer.ops) {
    // Selective recomputation runs its modules again in backward, saving what they drop.
    if (recompute.selects(op.dropped_by())) continue;
    if (!op.expert) {
      bytes += op.saved_bytes / tp_divisor(op.saved_split, split);
      continue;
    }
    // An expert's weights split over etp ranks, its rows as dispatched to the rank.
    const bool weight_split =
        op.saved_split == TensorSplit::kColumn || op.saved_split == TensorSplit::kRow;
    const int etp = split.etp > 0 ? split.etp : split.tp;
    bytes += op.saved_bytes / (weight_split ? etp : 1) * split.expert_rows * split.expert_load;
  }
  return bytes / split.cp;
}

double korthikanti_layer_activation_bytes(int64_t s, int64_t b, int64_t h, int64_t a, int tp,
                                          bool sequence_parallel, Recompute recompute) {
  if (s < 1 || b < 1 || h < 1 || a < 1 || tp < 1) {
    throw std::invalid_argument(
        "sequence, batch, hidden, heads and tensor parallel size must all be positive");
  }
  const double sbh = static_cast<double>(s) * static_cast<double>(b) * static_cast<double>(h);
  const double t = tp;
  // The attention scores, softmax and dropout: 5as/h per sbh, always split over heads.
  const double attention_core =
      5.0 * static_cast<double>(a) * static_cast<double>(s) / static_cast<double>(h) / t;
  // 24 of the 34 sbh are inside the GEMMs' split; the other 10 (LayerNorm inputs 4, QKV
  // and fc1 inputs 4, residual dropout masks 2) only sequence parallelism divides.
  const double replicated = sequence_parallel ? 10.0 / t : 10.0;
  switch (recompute) {
    case Recompute::kNone:
      return sbh * (replicated + 24.0 / t + attention_core);
    case Recompute::kSelective:
      return sbh * (replicated + 24.0 / t);
    case Recompute::kFull:
      return sequence_parallel ? 2.0 * sbh / t : 2.0 * sbh;
  }
  throw std::invalid_argument("unknown recompute mode");
}

}  // namespace dtsim::models
