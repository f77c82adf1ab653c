// bfloat16 to and from fp32: the upper 16 bits of a float, rounded to nearest even on the
// way down (a NaN stays a quiet NaN; its payload is not kept). The CPU cast and the
// executor's bf16 reductions.
#pragma once

#include <cstdint>
#include <cstring>

namespace dtsim::kernels {

inline float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  // Rounding would carry a NaN whose payload lies in the low half into the exponent (Inf).
  if ((bits & 0x7FFFFFFFU) > 0x7F800000U) return static_cast<uint16_t>((bits >> 16) | 0x40U);
  bits += 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace dtsim::kernels
