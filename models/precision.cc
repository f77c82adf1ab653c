// Precision, optimizer and recomputation names, and what each precision and optimizer costs
// per parameter: model-state memory as in the ZeRO paper (Rajbhandari et al. 2020, section
// 3.1) and the HBM traffic and arithmetic of the optimizer step.
#include "models/precision.h"

#include "models/name_table.h"
#include "models/recompute.h"

#include <utility>

namespace dtsim::models {
namespace {

constexpr std::pair<Precision, std::string_view> kPrecisionNames[] = {{Precision::kFp32, "fp32"},
                                                                      {Precision::kTf32, "tf32"},
                                                                      {Precision::kFp16, "fp16"},
                                                                      {Precision::kBf16, "bf16"},
                                                                      {Precision::kFp8, "fp8"}};
constexpr std::pair<Optimizer, std::string_view> kOptimizerNames[] = {
    {Optimizer::kSgdMomentum, "sgd"},
    {Optimizer::kAdam, "adam"},
    {Optimizer::kAdamW, "adamw"},
    {Optimizer::kLars, "lars"},
    {Optimizer::kLamb, "lamb"}};
constexpr std::pair<Recompute, std::string_view> kRecomputeNames[] = {
    {Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"}};

constexpr int kFp32Bytes = 4;

// fp32 optimizer states per parameter besides the master weights: Adam, AdamW and LAMB keep
// momentum and variance; SGD with momentum and LARS keep momentum.
int optimizer_state_count(Optimizer o) {
  return o == Optimizer::kSgdMomentum || o == Optimizer::kLars ? 1 : 2;
}

bool uses_trust_ratio(Optimizer o) { return o == Optimizer::kLars || o == Optimizer::kLamb; }

}  // namespace

std::string_view precision_name(Precision p) { return name_in(kPrecisionNames, p); }
std::optional<Precision> precision_from_name(std::string_view name) {
  return value_in(kPrecisionNames, name);
}
namespace {
constexpr std::pair<RecomputeModule, std::string_view> kRecomputeModuleNames[] = {
    {RecomputeModule::kCoreAttn, "core_attn"}, {RecomputeModule::kLayernorm, "layernorm"},
    {RecomputeModule::kMlp, "mlp"},            {RecomputeModule::kMoeAct, "moe_act"},
    {RecomputeModule::kMoe, "moe"},            {RecomputeModule::kSharedExperts, "shared_experts"}};
}  // namespace

std::string_view recompute_method_name(RecomputeMethod m) {
  return m == RecomputeMethod::kBlock ? "block" : "uniform";
}

std::string_view recompute_module_name(RecomputeModule m) {
  return name_in(kRecomputeModuleNames, m);
}
std::optional<RecomputeModule> recompute_module_from_name(std::string_view name) {
  return value_in(kRecomputeModuleNames, name);
}

std::string_view optimizer_name(Optimizer o) { return name_in(kOptimizerNames, o); }
std::optional<Optimizer> optimizer_from_name(std::string_view name) {
  return value_in(kOptimizerNames, name);
}
std::string_view recompute_name(Recompute r) { return name_in(kRecomputeNames, r); }
std::optional<Recompute> recompute_from_name(std::string_view name) {
  return value_in(kRecomputeNames, name);
}

DType math_dtype(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return DType::kFp32;
    case Precision::kTf32:
      return DType::kTf32;
    case Precision::kFp16:
      return DType::kFp16;
    case Precision::kBf16:
      return DType::kBf16;
    case Precision::kFp8:
      return DType::kFp8;
  }
  return DType::kFp32;
}

int activation_bytes(Precision p) { return is_mixed_precision(p) ? 2 : kFp32Bytes; }

DType stored_dtype(Precision p) {
  if (!is_mixed_precision(p)) return DType::kFp32;
  return p == Precision::kFp16 ? DType::kFp16 : DType::kBf16;
}

bool is_mixed_precision(Precision p) {
  return p == Precision::kFp16 || p == Precision::kBf16 || p == Precision::kFp8;
}

// Mixed-precision Adam: 2 + 2 + 12 (fp32 master 4, momentum 4, variance 4) = 16 bytes, the
// ZeRO paper's K = 12; fp32 Adam: 4 + 4 + 8. SGD with momentum and LARS keep one state:
// 2 + 2 + 8 mixed, 4 + 4 + 4 in fp32.
PerParameterBytes per_parameter_bytes(Precision p, Optimizer o) {
  const int states = optimizer_state_count(o) * kFp32Bytes;
  if (is_mixed_precision(p)) {
    const int working = activation_bytes(p);
    return PerParameterBytes{working, working, kFp32Bytes + states};
  }
  return PerParameterBytes{kFp32Bytes, kFp32Bytes, states};
}

// The step reads the gradient and reads and writes every optimizer state. In mixed precision
// the fp32 master copy is among those states and the step writes the 16-bit working copy;
// in fp32 the weights are the master copy and are read and written. Either way Adam moves
// 28 bytes and SGD with momentum 20. LARS and LAMB first compute per-layer norms (of the
// weights and of the gradient or the Adam update), a second pass over about 8 bytes more.
int optimizer_step_bytes_per_parameter(Precision p, Optimizer o) {
  const PerParameterBytes b = per_parameter_bytes(p, o);
  int bytes = b.gradients + 2 * b.optimizer;
  bytes += is_mixed_precision(p) ? b.weights : 2 * b.weights;
  if (uses_trust_ratio(o)) bytes += 2 * kFp32Bytes;
  return bytes;
}

// Counted per element, with scalars (learning rate, bias corrections) folded in beforehand:
//   SGD with momentum: v = mu v + g (2), w -= lr v (2)                           =  4
//   Adam: m = b1 m + (1 - b1) g (3), v = b2 v + (1 - b2) g^2 (4), sqrt(v) + eps (2),
//         m / that (1), w -= lr_t * that (2)                                     = 12
//   AdamW: Adam plus decoupled weight decay w -= lr wd w (2)                     = 14
//   LARS: SGD with momentum, weight decay g + wd w (2), the squares and sums of the
//         weight and gradient norms (4), scaling by the trust ratio (1)          = 11
//   LAMB: Adam, weight decay (2), the norms of the weights and the update (4), the
//         trust-ratio scaling (1)                                                = 19
int optimizer_step_flops_per_parameter(Optimizer o) {
  switch (o) {
    case Optimizer::kSgdMomentum:
      return 4;
    case Optimizer::kAdam:
      return 12;
    case Optimizer::kAdamW:
      return 14;
    case Optimizer::kLars:
      return 11;
    case Optimizer::kLamb:
      return 19;
  }
  return 0;
}

}  // namespace dtsim::models
