// What a device is: peak FLOP rates per dtype, memory, and its links out of the chip.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "sim/units.h"

namespace dtsim {

enum class DType { kFp64, kFp32, kTf32, kFp16, kBf16, kFp8, kInt8 };
inline constexpr std::array kAllDTypes{DType::kFp64, DType::kFp32, DType::kTf32, DType::kFp16,
                                       DType::kBf16, DType::kFp8,  DType::kInt8};
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_size_bytes(DType t);

enum class DeviceKind { kGpu, kCpu };

struct DeviceSpec {
  std::string name;
  std::string description;
  DeviceKind kind = DeviceKind::kGpu;
  // Dense peak per dtype; zero where the device has no such math.
  std::array<FlopRate, kAllDTypes.size()> peak{};
  Bytes memory_capacity;
  Bandwidth memory_bandwidth;
  // Per direction, all of the device's NVLink (or equivalent) links together; zero if none.
  Bandwidth intra_node_bandwidth;
  // Per direction, the device's host interface (PCIe generation x16).
  Bandwidth pcie_bandwidth;

  FlopRate peak_for(DType t) const { return peak[static_cast<size_t>(t)]; }
};

}  // namespace dtsim
