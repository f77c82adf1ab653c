// Pooling (a window reduction per output, the gradient spread back) and the cast of bf16
// tensors to FP8 before an FP8 GEMM (with the transposed copy its weight gradient reads).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/bf16.h"
#include "kernels/cpu_kernels.h"

namespace dtsim::kernels::cpu {

void pool_forward(int64_t rows, int64_t in_width, int64_t out_width, int64_t window, const float* x,
                  float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * in_width;
    for (int64_t o = 0; o < out_width; ++o) {
      // Output o reduces the window that starts where its share of the input begins.
      const int64_t first = o * in_width / out_width;
      const int64_t last = std::min(in_width, first + window);
      float m = xr[first];
      for (int64_t j = first + 1; j < last; ++j) m = std::max(m, xr[j]);
      y[r * out_width + o] = m;
    }
  }
}

void pool_backward(int64_t rows, int64_t in_width, int64_t out_width, const float* dy, float* dx) {
  const float share = static_cast<float>(out_width) / static_cast<float>(in_width);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < in_width; ++j) {
      dx[r * in_width + j] =
          dy[r * out_width + std::min(out_width - 1, j * out_width / in_width)] * share;
    }
  }
}

namespace {

// FP8 E4M3 (OCP 8-bit floating point, the format FP8 GEMMs take): saturating at +-448,
// rounding to nearest.
uint8_t float_to_e4m3(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  float a = std::min(std::fabs(f), 448.0f);
  if (!(a >= 0.015625f)) {  // below the smallest normal 2^-6: subnormals of 2^-9, or 0
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::lround(a / 0.001953125f)));
  }
  int e = 0;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int mantissa = static_cast<int>(std::lround((m * 2 - 1) * 8));
  int exponent = e - 1 + 7;
  if (mantissa == 8) {
    mantissa = 0;
    ++exponent;
  }
  if (exponent > 15 || (exponent == 15 && mantissa > 6)) {
    exponent = 15;
    mantissa = 6;
  }
  return static_cast<uint8_t>(sign | (exponent << 3) | mantissa);
}

}  // namespace

void cast_to_fp8(int64_t rows, int64_t width, const uint16_t* x, uint8_t* y, uint8_t* y_t) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      const uint8_t v = float_to_e4m3(bf16_to_float(x[r * width + c]));
      y[r * width + c] = v;
      y_t[c * rows + r] = v;
    }
  }
}

float e4m3_to_float(uint8_t v) {
  const float sign = (v & 0x80) != 0 ? -1.0f : 1.0f;
  const int exponent = (v >> 3) & 0xF;
  const int mantissa = v & 0x7;
  if (exponent == 0) return sign * static_cast<float>(mantissa) * 0.001953125f;
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

}  // namespace dtsim::kernels::cpu
