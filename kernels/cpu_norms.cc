// Row-wise CPU kernels: layer and RMS norms, softmax, the softmax cross-entropy loss.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu_kernels.h"

namespace dtsim::kernels::cpu {

namespace {
constexpr float kNormEps = 1e-5f;  // PyTorch's LayerNorm and Megatron's RMSNorm default
}

void layer_norm_forward(int64_t rows, int64_t width, const float* x, const float* gamma,
                        const float* beta, float* y, float* mean, float* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    float sum = 0, sq = 0;
    for (int64_t i = 0; i < width; ++i) {
      sum += xr[i];
      sq += xr[i] * xr[i];
    }
    const float mu = sum / static_cast<float>(width);
    const float var = std::max(0.0f, sq / static_cast<float>(width) - mu * mu);
    const float rs = 1.0f / std::sqrt(var + kNormEps);
    mean[r] = mu;
    rstd[r] = rs;
    float* yr = y + r * width;
    for (int64_t i = 0; i < width; ++i) yr[i] = (xr[i] - mu) * rs * gamma[i] + beta[i];
  }
}

void layer_norm_backward(int64_t rows, int64_t width, const float* dy, const float* x,
                         const float* gamma, const float* mean, const float* rstd, float* dx,
                         float* dgamma, float* dbeta) {
  const float inv_w = 1.0f / static_cast<float>(width);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    const float* dyr = dy + r * width;
    float* dxr = dx + r * width;
    const float mu = mean[r], rs = rstd[r];
    float sum_g = 0, sum_gx = 0;
    for (int64_t i = 0; i < width; ++i) {
      const float xhat = (xr[i] - mu) * rs;
      const float g = dyr[i] * gamma[i];
      sum_g += g;
      sum_gx += g * xhat;
      dgamma[i] += dyr[i] * xhat;
      dbeta[i] += dyr[i];
    }
    for (int64_t i = 0; i < width; ++i) {
      const float xhat = (xr[i] - mu) * rs;
      dxr[i] = rs * (dyr[i] * gamma[i] - inv_w * (sum_g + xhat * sum_gx));
    }
  }
}

void rms_norm_forward(int64_t rows, int64_t width, const float* x, const float* gamma, float* y,
                      float* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    float sq = 0;
    for (int64_t i = 0; i < width; ++i) sq += xr[i] * xr[i];
    const float rs = 1.0f / std::sqrt(sq / static_cast<float>(width) + kNormEps);
    rstd[r] = rs;
    float* yr = y + r * width;
    for (int64_t i = 0; i < width; ++i) yr[i] = xr[i] * rs * gamma[i];
  }
}

void rms_norm_backward(int64_t rows, int64_t width, const float* dy, const float* x,
                       const float* gamma, const float* rstd, float* dx, float* dgamma) {
  const float inv_w = 1.0f / static_cast<float>(width);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    const float* dyr = dy + r * width;
    float* dxr = dx + r * width;
    const float rs = rstd[r];
    float dot = 0;
    for (int64_t i = 0; i < width; ++i) {
      dot += dyr[i] * gamma[i] * xr[i];
      dgamma[i] += dyr[i] * xr[i] * rs;
    }
    const float c = dot * rs * rs * rs * inv_w;
    for (int64_t i = 0; i < width; ++i) dxr[i] = rs * dyr[i] * gamma[i] - c * xr[i];
  }
}

void softmax_forward(int64_t rows, int64_t width, const float* x, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    float* yr = y + r * width;
    const float mx = *std::max_element(xr, xr + width);
    float sum = 0;
    for (int64_t i = 0; i < width; ++i) {
      yr[i] = std::exp(xr[i] - mx);
      sum += yr[i];
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < width; ++i) yr[i] *= inv;
  }
}

void softmax_backward(int64_t rows, int64_t width, const float* y, const float* dy, float* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * width;
    const float* dyr = dy + r * width;
    float* dxr = dx + r * width;
    float dot = 0;
    for (int64_t i = 0; i < width; ++i) dot += yr[i] * dyr[i];
    for (int64_t i = 0; i < width; ++i) dxr[i] = yr[i] * (dyr[i] - dot);
  }
}

void cross_entropy_forward(int64_t rows, int64_t width, const float* logits,
                           const int32_t* labels, float* probs, float* loss) {
  softmax_forward(rows, width, logits, probs);
  for (int64_t r = 0; r < rows; ++r) {
    loss[r] = -std::log(std::max(probs[r * width + labels[r]], 1e-30f));
  }
}

void cross_entropy_backward(int64_t rows, int64_t width, const float* probs,
                            const int32_t* labels, float* dlogits) {
  // The mean loss over the rows: d/dlogits = (probs - onehot(label)) / rows.
  const float scale = 1.0f / static_cast<float>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* pr = probs + r * width;
    float* dr = dlogits + r * width;
    for (int64_t i = 0; i < width; ++i) dr[i] = pr[i] * scale;
    dr[labels[r]] -= scale;
  }
}

}  // namespace dtsim::kernels::cpu

namespace dtsim::kernels::cpu {

// Batch norm over NHWC activations: statistics per channel (a column) over all rows.
void batch_norm_forward(int64_t rows, int64_t width, const float* x, const float* gamma,
                        const float* beta, float* y, float* mean, float* rstd) {
  std::fill_n(mean, width, 0.0f);
  std::fill_n(rstd, width, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) mean[c] += x[r * width + c];
  }
  for (int64_t c = 0; c < width; ++c) mean[c] /= static_cast<float>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      const float dx = x[r * width + c] - mean[c];
      rstd[c] += dx * dx;
    }
  }
  for (int64_t c = 0; c < width; ++c) {
    rstd[c] = 1.0f / std::sqrt(rstd[c] / static_cast<float>(rows) + kNormEps);
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      y[r * width + c] = (x[r * width + c] - mean[c]) * rstd[c] * gamma[c] + beta[c];
    }
  }
}

void batch_norm_backward(int64_t rows, int64_t width, const float* dy, const float* x,
                         const float* gamma, const float* mean, const float* rstd, float* dx,
                         float* dgamma, float* dbeta) {
  std::vector<float> sum_dy(static_cast<size_t>(width), 0.0f),
      sum_dy_xhat(static_cast<size_t>(width), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      const float xhat = (x[r * width + c] - mean[c]) * rstd[c];
      sum_dy[c] += dy[r * width + c];
      sum_dy_xhat[c] += dy[r * width + c] * xhat;
    }
  }
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      const float xhat = (x[r * width + c] - mean[c]) * rstd[c];
      dx[r * width + c] =
          gamma[c] * rstd[c] * (dy[r * width + c] - inv_rows * (sum_dy[c] + xhat * sum_dy_xhat[c]));
    }
  }
  for (int64_t c = 0; c < width; ++c) {
    dgamma[c] += sum_dy_xhat[c];
    dbeta[c] += sum_dy[c];
  }
}

}  // namespace dtsim::kernels::cpu
