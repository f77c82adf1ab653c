// Cost models price one op on one device. The roofline model here reads every figure it
// uses from the device's DeviceEfficiency (sim/device.h); calibration/ adds a measured one.
#pragma once

#include <memory>
#include <string>

#include "models/workload.h"
#include "sim/device.h"
#include "sim/units.h"

namespace dtsim::models {

// One op as a rank runs it: its share after the plan's splits.
struct OpInstance {
  OpKind kind = OpKind::kElementwise;
  GemmShape gemm;     // after the split (zero for non-GEMM ops)
  double flops = 0;   // of this pass (forward or backward)
  double bytes = 0;   // HBM traffic of this pass
  DType dtype = DType::kBf16;
  bool backward = false;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Time of the op's kernels on `device` with the device to themselves.
  virtual Duration op_time(const OpInstance& op, const DeviceSpec& device) const = 0;
};

// time = launch overhead + max(FLOPs / (peak(dtype) * efficiency * sustained compute
// fraction), bytes / (HBM bandwidth * memory_bandwidth_fraction)), where GEMM-like ops
// (matmul, attention, conv) reach an efficiency that grows with their size (see
// DeviceEfficiency) and other ops run on the vector units at the fp32 peak (times the
// sustained compute fraction too).
class RooflineCostModel final : public CostModel {
 public:
  std::string name() const override { return "roofline"; }
  Duration op_time(const OpInstance& op, const DeviceSpec& device) const override;
  // The fraction of peak a GEMM of this shape reaches on `device` when its math runs in
  // `math` (exposed for tests and reports).
  static double gemm_efficiency(const GemmShape& shape, const DeviceSpec& device, OpKind kind,
                                DType math = DType::kBf16);
};

// The dtype whose math a GEMM of `t` operands runs in on `device`: of those that can carry
// them, the one with the highest peak (the first on a tie); fp16 on a P40, whose fp16 math
// runs at 1/64 rate, is fp32. Throws std::invalid_argument when none has a peak.
DType gemm_math_dtype(DType t, const DeviceSpec& device);

}  // namespace dtsim::models
