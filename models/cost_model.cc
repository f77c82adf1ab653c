// The roofline cost model (Williams, Waterman and Patterson, "Roofline", CACM 2009): the
// larger of compute time and memory time (the launch is the caller's), with GEMM efficiency
// growing with the GEMM's size and falling with wave quantization, as the device's
// DeviceEfficiency describes.
#include "models/cost_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace dtsim::models {
namespace {

// Efficiency of a GEMM-like op of `flops` FLOPs whose smallest dimension is `min_dim`
// (nullopt when the shape is unknown and only the FLOP count is), its math in `math`.
double gemm_like_efficiency(double flops, std::optional<double> min_dim, const DeviceEfficiency& e,
                            KernelKind kind, bool attention_core, DType math) {
  const double ceiling = math == DType::kFp8 ? e.gemm_max_fp8 : e.gemm_max;
  double efficiency = ceiling * flops / (flops + e.gemm_half_flops);
  if (min_dim) efficiency *= *min_dim / (*min_dim + e.gemm_half_dim);
  if (attention_core) efficiency *= e.attention_factor;
  if (kind == KernelKind::kConv) efficiency *= e.conv_factor;
  return efficiency;
}

bool shape_known(const GemmDims& s) { return s.m > 0 && s.n > 0 && s.k > 0 && s.batch > 0; }

// The fraction of its waves a GEMM fills: tiles / (units x whole waves). Below one wave
// cuBLAS picks smaller tiles or splits k, which the size terms already price.
double wave_efficiency(const GemmDims& s, const DeviceEfficiency& e) {
  if (e.compute_units <= 0 || e.gemm_tile_m <= 0 || e.gemm_tile_n <= 0) return 1;
  const double tiles = std::ceil(static_cast<double>(s.m) / e.gemm_tile_m) *
                       std::ceil(static_cast<double>(s.n) / e.gemm_tile_n) *
                       static_cast<double>(s.batch);
  const double waves = tiles / e.compute_units;
  return waves < 1 ? 1.0 : waves / std::ceil(waves);
}

// Tile quantization (the same guide): a grouped GEMM runs every group with the kernel's one
// tile shape, so a group whose rows do not fill its last tile row wastes the rest of it.
// Experts get few rows each, and the waste grows as their tokens shrink. Dense GEMMs are
// left to the size terms: cuBLAS picks a tile for each shape.
double group_tile_efficiency(const GemmDims& s, const DeviceEfficiency& e) {
  if (e.gemm_tile_m <= 0) return 1;
  const double tile_rows = std::ceil(static_cast<double>(s.m) / e.gemm_tile_m) * e.gemm_tile_m;
  return static_cast<double>(s.m) / tile_rows;
}

// The dtypes whose math can carry `t`'s values, `t` first. A framework runs a GEMM in the
// fastest of them the device has:
//  - bf16 and fp16 upcast to fp32, never to each other (their ranges differ). A V100 or P100
//    running a bf16 plan therefore gets the fp32 rate: neither has bf16 math, and PyTorch
//    runs bf16 matmuls there without tensor cores. A P40 running fp16 gets its fp32 rate too,
//    not its 1/64-rate fp16 math: cuBLAS's fp16-in, fp32-compute GEMM runs at the fp32 rate.
//  - tf32 is a mode of fp32 math: without tf32 tensor cores it is fp32.
//  - fp8 (e4m3 and e5m2) values are exact in fp16 and bf16, so fp8 GEMMs on a device without
//    fp8 math (A100) run in 16-bit, or failing that fp32. int8 is exact in fp16 as well.
//  - fp64 has no fallback.
std::span<const DType> math_for(DType t) {
  static constexpr DType kFp64[] = {DType::kFp64};
  static constexpr DType kFp32[] = {DType::kFp32};
  static constexpr DType kTf32[] = {DType::kTf32, DType::kFp32};
  static constexpr DType kFp16[] = {DType::kFp16, DType::kFp32};
  static constexpr DType kBf16[] = {DType::kBf16, DType::kFp32};
  static constexpr DType kFp8[] = {DType::kFp8, DType::kFp16, DType::kBf16, DType::kFp32};
  static constexpr DType kInt8[] = {DType::kInt8, DType::kFp16, DType::kFp32};
  switch (t) {
    case DType::kFp64: return kFp64;
    case DType::kFp32: return kFp32;
    case DType::kTf32: return kTf32;
    case DType::kFp16: return kFp16;
    case DType::kBf16: return kBf16;
    case DType::kFp8: return kFp8;
    case DType::kInt8: return kInt8;
  }
  return kFp32;
}

// Non-GEMM ops run on the vector units, priced at the fp32 peak.
FlopRate vector_rate(const DeviceSpec& device) {
  const FlopRate rate = device.peak_for(DType::kFp32);
  if (rate.flops_per_second() <= 0) {
    throw std::invalid_argument("device \"" + device.name +
                                "\" has no fp32 peak, which prices its non-GEMM ops");
  }
  return rate;
}

}  // namespace

bool is_gemm_like(KernelKind kind) {
  return kind == KernelKind::kGemm || kind == KernelKind::kBatchedGemm ||
         kind == KernelKind::kGroupedGemm ||
         kind == KernelKind::kFlashAttention || kind == KernelKind::kConv;
}

Duration launched_time(const CostModel& costs, const OpSignature& op, const DeviceSpec& device) {
  return costs.price(op, device).time + device.efficiency.kernel_launch;
}

DType gemm_math_dtype(DType t, const DeviceSpec& device) {
  DType chosen = t;
  FlopRate best;
  for (DType math : math_for(t)) {
    if (device.peak_for(math) > best) {
      best = device.peak_for(math);
      chosen = math;
    }
  }
  if (best.flops_per_second() <= 0) {
    throw std::invalid_argument("device \"" + device.name + "\" has no peak FLOP rate for " +
                                std::string(dtype_name(t)) + " nor for a dtype that can carry it");
  }
  return chosen;
}

// A shape with a zero dimension does no work and reaches nothing of the peak.
double RooflineCostModel::gemm_efficiency(const GemmDims& shape, const DeviceSpec& device,
                                          KernelKind kind, bool attention_core, DType math,
                                          OpPass pass) {
  if (!shape_known(shape)) return 0;
  const double min_dim = static_cast<double>(std::min({shape.m, shape.n, shape.k}));
  const double grouped = kind == KernelKind::kGroupedGemm && pass != OpPass::kBackwardWeight
                             ? group_tile_efficiency(shape, device.efficiency)
                             : 1.0;
  return gemm_like_efficiency(shape.flops(), min_dim, device.efficiency, kind, attention_core,
                              math) *
         wave_efficiency(shape, device.efficiency) * grouped;
}

OpCost RooflineCostModel::price(const OpSignature& op, const DeviceSpec& device) const {
  const DeviceEfficiency& e = device.efficiency;
  Duration compute;
  if (op.flops > 0) {
    const double sustained = e.sustained_compute_fraction;
    if (is_gemm_like(op.kind)) {
      // A GEMM's size sets its efficiency. FlashAttention's is that of its QK^T, whose shape
      // the signature carries, for its forward and backward kernels alike.
      const DType math = gemm_math_dtype(op.math, device);
      const bool attention = op.attention_core;
      const double efficiency =
          shape_known(op.gemm)
              ? gemm_efficiency(op.gemm, device, op.kind, attention, math, op.pass)
              : gemm_like_efficiency(op.flops, std::nullopt, e, op.kind, attention, math);
      const FlopRate rate = device.peak_for(math);
      compute = Flops(op.flops) / FlopRate::per_s(rate.flops_per_second() * efficiency * sustained);
    } else {
      compute =
          Flops(op.flops) / FlopRate::per_s(vector_rate(device).flops_per_second() * sustained);
    }
  }
  Duration memory;
  if (op.bytes > 0) {
    const Bandwidth reachable = device.memory_bandwidth * e.memory_bandwidth_fraction;
    memory = Bytes(std::llround(op.bytes)) / reachable;
  }
  return OpCost{std::max(compute, memory), CostSource::kRoofline};
}

}  // namespace dtsim::models
