// Convolutions on the CPU: im2col and OpenBLAS's sgemm (the implicit GEMM of the signature),
// one image at a time; the data gradient through col2im, the weight gradient accumulated.
#include <algorithm>

#include "kernels/cpu_kernels.h"

namespace dtsim::kernels::cpu {

namespace {

int64_t out_size(int64_t in, int64_t kernel, int32_t stride, int32_t padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

// col[(c, r, s), (y, x)] = image[c, y * stride - pad + r, x * stride - pad + s], or 0 outside.
void im2col(const ConvDims& c, const float* image, float* col) {
  const int64_t p = out_size(c.h, c.r, c.stride, c.padding),
                q = out_size(c.w, c.s, c.stride, c.padding);
  for (int64_t ch = 0; ch < c.c; ++ch) {
    for (int64_t r = 0; r < c.r; ++r) {
      for (int64_t s = 0; s < c.s; ++s) {
        float* out = col + ((ch * c.r + r) * c.s + s) * p * q;
        for (int64_t y = 0; y < p; ++y) {
          const int64_t iy = y * c.stride - c.padding + r;
          for (int64_t x = 0; x < q; ++x) {
            const int64_t ix = x * c.stride - c.padding + s;
            out[y * q + x] = iy >= 0 && iy < c.h && ix >= 0 && ix < c.w
                                 ? image[(ch * c.h + iy) * c.w + ix]
                                 : 0.0f;
          }
        }
      }
    }
  }
}

void col2im(const ConvDims& c, const float* col, float* image) {
  const int64_t p = out_size(c.h, c.r, c.stride, c.padding),
                q = out_size(c.w, c.s, c.stride, c.padding);
  std::fill_n(image, c.c * c.h * c.w, 0.0f);
  for (int64_t ch = 0; ch < c.c; ++ch) {
    for (int64_t r = 0; r < c.r; ++r) {
      for (int64_t s = 0; s < c.s; ++s) {
        const float* in = col + ((ch * c.r + r) * c.s + s) * p * q;
        for (int64_t y = 0; y < p; ++y) {
          const int64_t iy = y * c.stride - c.padding + r;
          if (iy < 0 || iy >= c.h) continue;
          for (int64_t x = 0; x < q; ++x) {
            const int64_t ix = x * c.stride - c.padding + s;
            if (ix >= 0 && ix < c.w) image[(ch * c.h + iy) * c.w + ix] += in[y * q + x];
          }
        }
      }
    }
  }
}

}  // namespace

int64_t conv_output_pixels(const ConvDims& c) {
  return out_size(c.h, c.r, c.stride, c.padding) * out_size(c.w, c.s, c.stride, c.padding);
}

void conv_forward(const ConvDims& c, const float* x, const float* w, float* y, float* col) {
  const int64_t pq = conv_output_pixels(c), crs = c.c * c.r * c.s;
  for (int64_t n = 0; n < c.n; ++n) {
    im2col(c, x + n * c.c * c.h * c.w, col);
    // y_n[k, pq] = W[k, crs] col[crs, pq]
    gemm(GemmDims{c.k, pq, crs, 1, false, false}, false, w, col, y + n * c.k * pq);
  }
}

void conv_backward_data(const ConvDims& c, const float* dy, const float* w, float* dx, float* col) {
  const int64_t pq = conv_output_pixels(c), crs = c.c * c.r * c.s;
  for (int64_t n = 0; n < c.n; ++n) {
    // dcol[crs, pq] = W^T[crs, k] dy_n[k, pq]
    gemm(GemmDims{crs, pq, c.k, 1, true, false}, false, w, dy + n * c.k * pq, col);
    col2im(c, col, dx + n * c.c * c.h * c.w);
  }
}

void conv_backward_weight(const ConvDims& c, const float* dy, const float* x, float* dw,
                          float* col) {
  const int64_t pq = conv_output_pixels(c), crs = c.c * c.r * c.s;
  for (int64_t n = 0; n < c.n; ++n) {
    im2col(c, x + n * c.c * c.h * c.w, col);
    // dW[k, crs] += dy_n[k, pq] col^T[pq, crs]
    gemm(GemmDims{c.k, crs, pq, 1, false, true}, true, dy + n * c.k * pq, col, dw);
  }
}

}  // namespace dtsim::kernels::cpu
