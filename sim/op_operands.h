// Which tensors an op's kernel reads and writes: its operands bound to a rank's weights,
// gradients, optimizer states and a micro-batch's activations, so that a real executor runs
// a step's kernels on shared, reused buffers as a framework does. Kept beside the
// OpSignature, not in it: two GEMMs of one shape on different tensors cost the same.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

// What a tensor holds. Op lists are shared by the ranks of a stage and by micro-batches, so
// a reference is relative: the rank that runs the task resolves it to its own tensor, and
// the roles of one micro-batch (activations) to that micro-batch's, which the compute task
// names (TaskFields::micro_batch).
enum class TensorRole : uint8_t {
  // A micro-batch's activations: of op `op` of layer `layer`.
  kOutput,      // its result (the next op's input)
  kOutputGrad,  // the gradient with respect to its result
  kMean,        // a norm's saved statistics
  kRstd,
  kMask,   // a dropout's kept-element mask
  kLse,    // FlashAttention's log-sum-exp per query row
  kProbs,  // the loss's softmax probabilities
  // The rank's model state, kept across steps: of op `op` of layer `layer`.
  kWeight,
  kBias,  // a norm's beta, a bias add's bias
  kWeightGrad,
  kBiasGrad,
  // The rank's whole model state, as one contiguous buffer each (Megatron-LM's
  // param-and-grad buffers): what the optimizer and the gradient reduction walk. Layer and
  // op are 0.
  kParams,
  kGrads,
  kMoment1,  // Adam's first and second moments
  kMoment2,
};
inline constexpr TensorRole kLastTensorRole = TensorRole::kMoment2;
std::string_view tensor_role_name(TensorRole r);
std::optional<TensorRole> tensor_role_from_name(std::string_view name);
// Whether the role is a micro-batch's (activations) rather than the rank's model state.
inline bool per_micro_batch(TensorRole r) { return r <= TensorRole::kProbs; }
// Whether the role is one op's part of the model state (its weight, bias or their
// gradients), which lies in the whole state's buffers.
inline bool op_state(TensorRole r) {
  return r >= TensorRole::kWeight && r <= TensorRole::kBiasGrad;
}

// The layer index of the model's input (token ids, images): the input of layer 0.
inline constexpr uint32_t kModelInput = UINT32_MAX;

struct TensorRef {
  TensorRole role = TensorRole::kOutput;
  uint32_t layer = 0;  // of the model (not of the chunk): stages hold different layers
  uint32_t op = 0;     // of the layer
  bool operator==(const TensorRef&) const = default;
  auto operator<=>(const TensorRef&) const = default;
};

// One operand of an op's kernel (by the name the kernel API gives it: "a", "weight", "dy";
// kernels/kernel.h) bound to a tensor, starting `offset` elements into it (Q, K and V lie in
// one QKV tensor). Operands an op leaves unbound are the kernel's own scratch (im2col's
// columns, token ids).
struct OperandBinding {
  std::string operand;
  TensorRef tensor;
  int64_t offset = 0;
  bool operator==(const OperandBinding&) const = default;
};
using OpOperands = std::vector<OperandBinding>;

size_t hash_value(const OpOperands& operands);

}  // namespace dtsim
