// Names and sizes of element types.
#include "sim/dtype.h"

namespace dtsim {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFp64:
      return "fp64";
    case DType::kFp32:
      return "fp32";
    case DType::kTf32:
      return "tf32";
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
    case DType::kFp8:
      return "fp8";
    case DType::kInt8:
      return "int8";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

int dtype_size_bytes(DType t) {
  switch (t) {
    case DType::kFp64:
      return 8;
    case DType::kFp32:
    case DType::kTf32:
      return 4;
    case DType::kFp16:
    case DType::kBf16:
      return 2;
    case DType::kFp8:
    case DType::kInt8:
      return 1;
  }
  return 4;
}

}  // namespace dtsim
