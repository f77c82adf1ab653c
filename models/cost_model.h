// The roofline cost model, which reads every figure it uses from the device's
// DeviceEfficiency (sim/device.h); calibration/ adds a measured one behind the same
// interface (sim/cost_model.h).
#pragma once

#include <string>

#include "sim/cost_model.h"
#include "sim/device.h"
#include "sim/op_signature.h"
#include "sim/units.h"

namespace dtsim::models {

// A kernel's time with its launch: what a compute task adds up per kernel.
Duration launched_time(const CostModel& costs, const OpSignature& op, const DeviceSpec& device);

// time = max(FLOPs / (peak(math) * efficiency * sustained compute fraction), bytes / (HBM
// bandwidth * memory_bandwidth_fraction)), where GEMM-like kernels (GEMMs, batched GEMMs,
// FlashAttention, convolutions) reach an efficiency that grows with their size (see
// DeviceEfficiency) and other kernels run on the vector units at the fp32 peak (times the
// sustained compute fraction too). The launch is not in it (see OpCost).
class RooflineCostModel final : public CostModel {
 public:
  std::string name() const override { return "roofline"; }
  OpCost price(const OpSignature& op, const DeviceSpec& device) const override;
  // The fraction of peak a GEMM of this shape reaches on `device` when its math runs in
  // `math` (exposed for tests and reports); attention and conv kernels reach a fraction of
  // it (DeviceEfficiency::attention_factor, conv_factor). `pass`: a grouped GEMM's weight
  // gradient has the routed rows as its reduction, not as its m.
  static double gemm_efficiency(const GemmDims& shape, const DeviceSpec& device, KernelKind kind,
                                bool attention_core = false, DType math = DType::kBf16,
                                OpPass pass = OpPass::kForward);
};

// Whether the roofline prices `kind` as a GEMM (on the matrix units) rather than on the
// vector units.
bool is_gemm_like(KernelKind kind);

// The dtype whose math a GEMM of `t` operands runs in on `device`: of those that can carry
// them, the one with the highest peak (the first on a tie); fp16 on a P40, whose fp16 math
// runs at 1/64 rate, is fp32. Throws std::invalid_argument when none has a peak.
DType gemm_math_dtype(DType t, const DeviceSpec& device);

}  // namespace dtsim::models
