// Names of tensor roles and the operand list's hash.
#include "sim/op_operands.h"

#include <array>
#include <functional>
#include <utility>

namespace dtsim {

namespace {

constexpr std::array<std::pair<TensorRole, std::string_view>, 15> kRoleNames{{
    {TensorRole::kOutput, "output"},
    {TensorRole::kOutputGrad, "output_grad"},
    {TensorRole::kMean, "mean"},
    {TensorRole::kRstd, "rstd"},
    {TensorRole::kMask, "mask"},
    {TensorRole::kLse, "lse"},
    {TensorRole::kProbs, "probs"},
    {TensorRole::kWeight, "weight"},
    {TensorRole::kBias, "bias"},
    {TensorRole::kWeightGrad, "weight_grad"},
    {TensorRole::kBiasGrad, "bias_grad"},
    {TensorRole::kParams, "params"},
    {TensorRole::kGrads, "grads"},
    {TensorRole::kMoment1, "moment1"},
    {TensorRole::kMoment2, "moment2"},
}};
static_assert(kRoleNames.size() == static_cast<size_t>(kLastTensorRole) + 1);

}  // namespace

std::string_view tensor_role_name(TensorRole r) {
  for (const auto& [role, name] : kRoleNames) {
    if (role == r) return name;
  }
  return "?";
}

std::optional<TensorRole> tensor_role_from_name(std::string_view name) {
  for (const auto& [role, n] : kRoleNames) {
    if (n == name) return role;
  }
  return std::nullopt;
}

size_t hash_value(const OpOperands& operands) {
  size_t h = operands.size();
  for (const OperandBinding& b : operands) {
    h = h * 1000003 ^ std::hash<std::string>{}(b.operand);
    h = h * 1000003 ^ (static_cast<size_t>(b.tensor.role) << 56 ^
                       static_cast<size_t>(b.tensor.layer) << 20 ^ b.tensor.op);
    h = h * 1000003 ^ static_cast<size_t>(b.offset);
  }
  return h;
}

}  // namespace dtsim
