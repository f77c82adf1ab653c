// The efficiency figures' table.
#include "sim/efficiency_figures.h"

#include <array>
#include <limits>

namespace dtsim {

namespace {

using T = EfficiencyFigure::Type;
using E = DeviceEfficiency;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxCount = 1 << 20;

constexpr EfficiencyFigure number(std::string_view key, double low, bool low_in, double high,
                                  bool high_in, std::string_view expected, std::string_view used_by,
                                  double E::*member) {
  EfficiencyFigure f;
  f.key = key;
  f.type = T::kNumber;
  f.low = low;
  f.low_included = low_in;
  f.high = high;
  f.high_included = high_in;
  f.expected = expected;
  f.used_by = used_by;
  f.number = member;
  return f;
}

constexpr EfficiencyFigure fraction(std::string_view key, std::string_view used_by,
                                    double E::*member) {
  return number(key, 0, false, 1, true, "a fraction in (0, 1]", used_by, member);
}

constexpr EfficiencyFigure unit_interval(std::string_view key, std::string_view used_by,
                                         double E::*member) {
  return number(key, 0, true, 1, false, "a number in [0, 1)", used_by, member);
}

constexpr EfficiencyFigure integer(std::string_view key, double low, int E::*member,
                                   std::string_view used_by = "roofline") {
  EfficiencyFigure f;
  f.key = key;
  f.type = T::kInteger;
  f.low = low;
  f.low_included = true;
  f.high = kMaxCount;
  f.high_included = true;
  f.used_by = used_by;
  f.integer = member;
  return f;
}

const std::array kFigures = [] {
  EfficiencyFigure half_flops;
  half_flops.key = "gemm_half_flops";
  half_flops.type = T::kFlops;
  half_flops.expected = "a positive FLOP count (the GEMM size that reaches half of gemm_max)";
  half_flops.used_by = "roofline";
  half_flops.number = &E::gemm_half_flops;
  EfficiencyFigure launch;
  launch.key = "kernel_launch";
  launch.type = T::kDuration;
  launch.used_by = "roofline";
  launch.duration = &E::kernel_launch;
  EfficiencyFigure workspace;
  workspace.key = "gemm_workspace";
  workspace.type = T::kBytes;
  workspace.used_by = "memory";
  workspace.bytes = &E::gemm_workspace;
  return std::array{
      fraction("gemm_max", "roofline", &E::gemm_max),
      fraction("gemm_max_fp8", "roofline", &E::gemm_max_fp8),
      half_flops,
      number("gemm_half_dim", 0, false, kInf, false, "a positive number", "roofline",
             &E::gemm_half_dim),
      integer("compute_units", 0, &E::compute_units),
      integer("gemm_tile_m", 1, &E::gemm_tile_m),
      integer("gemm_tile_n", 1, &E::gemm_tile_n),
      fraction("attention_factor", "roofline", &E::attention_factor),
      fraction("conv_factor", "roofline", &E::conv_factor),
      fraction("memory_bandwidth_fraction", "roofline", &E::memory_bandwidth_fraction),
      launch,
      workspace,
      unit_interval("comm_compute_slowdown", "runtime", &E::comm_compute_slowdown),
      fraction("nvlink_efficiency", "cluster", &E::nvlink_efficiency),
      fraction("pcie_efficiency", "cluster", &E::pcie_efficiency),
      unit_interval("speed_variation", "runtime", &E::speed_variation),
      fraction("sustained_compute_fraction", "roofline", &E::sustained_compute_fraction),
      integer("nccl_channels", 0, &E::nccl_channels, "memory"),
      integer("nccl_p2p_channels", 1, &E::nccl_p2p_channels, "memory"),
      integer("compute_capability", 0, &E::compute_capability, "memory"),
  };
}();

}  // namespace

std::span<const EfficiencyFigure> efficiency_figures() { return kFigures; }

}  // namespace dtsim
