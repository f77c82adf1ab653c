// FlashAttention on the CPU: the fused kernel's algorithm (Dao et al. 2022) one query row
// at a time, an online softmax over the keys, the log-sum-exp saved for the backward pass,
// which recomputes the probabilities from it. Causal masks and sliding windows skip the
// keys they exclude, as the GPU kernel skips their tiles.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu_kernels.h"

namespace dtsim::kernels::cpu {

namespace {

// The keys query i attends to, [first, last): causal aligns the queries with the last
// q_len keys; a window keeps the `window` keys up to the query's own position.
void key_range(const AttentionDims& a, bool causal, int64_t i, int64_t& first, int64_t& last) {
  first = 0;
  last = a.kv_len;
  if (causal) {
    last = std::min(a.kv_len, i + (a.kv_len - a.q_len) + 1);
    if (a.window > 0) first = std::max<int64_t>(0, last - a.window);
  }
}

}  // namespace

void flash_attention_forward(const AttentionDims& a, bool causal, const float* q, const float* k,
                             const float* v, float* o, float* lse) {
  const int64_t d = a.head_dim;
  const int64_t group = a.heads / std::max<int64_t>(1, a.kv_heads);  // query heads per KV head
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> acc(static_cast<size_t>(d));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t kvh = h / std::max<int64_t>(1, group);
      const float* kh = k + (b * a.kv_heads + kvh) * a.kv_len * d;
      const float* vh = v + (b * a.kv_heads + kvh) * a.kv_len * d;
      for (int64_t i = 0; i < a.q_len; ++i) {
        const int64_t row = (b * a.heads + h) * a.q_len + i;
        const float* qi = q + row * d;
        int64_t first = 0, last = 0;
        key_range(a, causal, i, first, last);
        float m = -INFINITY, l = 0;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j = first; j < last; ++j) {
          float s = 0;
          for (int64_t x = 0; x < d; ++x) s += qi[x] * kh[j * d + x];
          s *= scale;
          const float m_new = std::max(m, s);
          const float correction = std::exp(m - m_new);
          const float p = std::exp(s - m_new);
          l = l * correction + p;
          for (int64_t x = 0; x < d; ++x) acc[x] = acc[x] * correction + p * vh[j * d + x];
          m = m_new;
        }
        float* oi = o + row * d;
        const float inv = l > 0 ? 1.0f / l : 0.0f;
        for (int64_t x = 0; x < d; ++x) oi[x] = acc[x] * inv;
        lse[row] = l > 0 ? m + std::log(l) : -INFINITY;
      }
    }
  }
}

void flash_attention_backward(const AttentionDims& a, bool causal, const float* q, const float* k,
                              const float* v, const float* o, const float* dout, const float* lse,
                              float* dq, float* dk, float* dv) {
  const int64_t d = a.head_dim;
  const int64_t group = a.heads / std::max<int64_t>(1, a.kv_heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::fill_n(dk, a.batch * a.kv_heads * a.kv_len * d, 0.0f);
  std::fill_n(dv, a.batch * a.kv_heads * a.kv_len * d, 0.0f);
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t kvh = h / std::max<int64_t>(1, group);
      const int64_t kv_base = (b * a.kv_heads + kvh) * a.kv_len * d;
      for (int64_t i = 0; i < a.q_len; ++i) {
        const int64_t row = (b * a.heads + h) * a.q_len + i;
        const float* qi = q + row * d;
        const float* doi = dout + row * d;
        float* dqi = dq + row * d;
        std::fill_n(dqi, d, 0.0f);
        // D = rowsum(dO * O): the softmax backward's correction term.
        float delta = 0;
        for (int64_t x = 0; x < d; ++x) delta += doi[x] * o[row * d + x];
        int64_t first = 0, last = 0;
        key_range(a, causal, i, first, last);
        for (int64_t j = first; j < last; ++j) {
          const float* kj = k + kv_base + j * d;
          const float* vj = v + kv_base + j * d;
          float s = 0, dp = 0;
          for (int64_t x = 0; x < d; ++x) {
            s += qi[x] * kj[x];
            dp += doi[x] * vj[x];
          }
          const float p = std::exp(s * scale - lse[row]);
          const float ds = p * (dp - delta) * scale;
          for (int64_t x = 0; x < d; ++x) {
            dv[kv_base + j * d + x] += p * doi[x];
            dqi[x] += ds * kj[x];
            dk[kv_base + j * d + x] += ds * qi[x];
          }
        }
      }
    }
  }
}

}  // namespace dtsim::kernels::cpu
