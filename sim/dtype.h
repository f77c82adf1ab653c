// Element types of tensors and of the math that runs on them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dtsim {

enum class DType : uint8_t { kFp64, kFp32, kTf32, kFp16, kBf16, kFp8, kInt8 };
inline constexpr std::array kAllDTypes{DType::kFp64, DType::kFp32, DType::kTf32, DType::kFp16,
                                       DType::kBf16, DType::kFp8,  DType::kInt8};
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_size_bytes(DType t);
// The element type tensors of `math` math are stored in: tf32 is a mode of fp32 math.
constexpr DType storage_dtype(DType math) { return math == DType::kTf32 ? DType::kFp32 : math; }

}  // namespace dtsim
