// Training precision and optimizer: what they cost per parameter and per activation.
#pragma once

#include <optional>
#include <string_view>

#include "sim/device.h"

namespace dtsim::models {

enum class Precision { kFp32, kTf32, kFp16, kBf16, kFp8 };
enum class Optimizer { kSgdMomentum, kAdam, kAdamW, kLars, kLamb };
enum class Recompute { kNone, kSelective, kFull };
inline constexpr Precision kAllPrecisions[] = {Precision::kFp32, Precision::kTf32, Precision::kFp16,
                                               Precision::kBf16, Precision::kFp8};
inline constexpr Optimizer kAllOptimizers[] = {Optimizer::kSgdMomentum, Optimizer::kAdam,
                                               Optimizer::kAdamW, Optimizer::kLars, Optimizer::kLamb};
inline constexpr Recompute kAllRecomputes[] = {Recompute::kNone, Recompute::kSelective,
                                               Recompute::kFull};

std::string_view precision_name(Precision p);
std::optional<Precision> precision_from_name(std::string_view name);
std::string_view optimizer_name(Optimizer o);
std::optional<Optimizer> optimizer_from_name(std::string_view name);
std::string_view recompute_name(Recompute r);
std::optional<Recompute> recompute_from_name(std::string_view name);

// The dtype whose peak the GEMMs run at (fp8 uses FP8 tensor cores).
DType math_dtype(Precision p);
// Bytes of one stored activation or low-precision weight element: 4 for fp32/tf32, 2 for
// fp16/bf16 and for fp8 (Transformer Engine keeps activations and weights in 16 bits and
// casts to FP8 inside the GEMM).
int activation_bytes(Precision p);
// The element type of those stored activations, working weights and gradients (what the
// step's collectives move): fp32, fp16, or bf16 (for bf16 and fp8).
DType stored_dtype(Precision p);
bool is_mixed_precision(Precision p);  // fp16, bf16, fp8: an fp32 master copy exists

// Per-parameter memory, as in the ZeRO paper (Rajbhandari et al. 2020, section 3.1):
// weights (the working copy), gradients, and optimizer states (fp32 master copy, momentum,
// variance) for mixed precision; fp32 training has no master copy.
struct PerParameterBytes {
  int weights = 0;
  int gradients = 0;
  int optimizer = 0;
};
PerParameterBytes per_parameter_bytes(Precision p, Optimizer o);

// HBM traffic of the optimizer step per parameter (read and write every state, read the
// gradient, write the weights), for the memory-bound optimizer kernel.
int optimizer_step_bytes_per_parameter(Precision p, Optimizer o);
// FLOPs of the optimizer step per parameter (Adam: about 12; SGD with momentum: 4).
int optimizer_step_flops_per_parameter(Optimizer o);

}  // namespace dtsim::models
