// The CPU kernels of attention, convolution, batch norm, pooling, the MoE router and the
// FP8 cast against naive references (forwards against double-precision loops, backwards
// against finite differences of them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/kernel.h"
#include "tests/kernels/reference.h"

namespace dtsim::kernels {
namespace {

using namespace test;

OpSignature fp32(KernelKind kind, OpPass pass) {
  OpSignature op;
  op.name = "t";
  op.kind = kind;
  op.pass = pass;
  op.storage = op.math = DType::kFp32;
  return op;
}

// Softmax attention, one (batch, head, query) row at a time, keys masked as the kernel's.
Vec attention_ref(const AttentionDims& a, bool causal, const Vec& q, const Vec& k, const Vec& v) {
  const int64_t d = a.head_dim, group = a.heads / a.kv_heads;
  Vec o(q.size(), 0.0);
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t kv = (b * a.kv_heads + h / group) * a.kv_len * d;
      for (int64_t i = 0; i < a.q_len; ++i) {
        const int64_t row = ((b * a.heads + h) * a.q_len + i) * d;
        const int64_t last = causal ? std::min(a.kv_len, i + a.kv_len - a.q_len + 1) : a.kv_len;
        const int64_t first = causal && a.window > 0 ? std::max<int64_t>(0, last - a.window) : 0;
        std::vector<double> s;
        double mx = -1e300;
        for (int64_t j = first; j < last; ++j) {
          double dot = 0;
          for (int64_t x = 0; x < d; ++x) dot += q[row + x] * k[kv + j * d + x];
          s.push_back(dot / std::sqrt(static_cast<double>(d)));
          mx = std::max(mx, s.back());
        }
        double sum = 0;
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = first; j < last; ++j) {
          for (int64_t x = 0; x < d; ++x) o[row + x] += s[j - first] / sum * v[kv + j * d + x];
        }
      }
    }
  }
  return o;
}

TEST(CpuKernelsMore, FlashAttentionMatchesSoftmaxAttentionForwardAndBackward) {
  // Grouped-query (4 query heads over 2 KV heads), causal with a window, and plain.
  for (const auto& [causal, window] :
       std::vector<std::pair<bool, int64_t>>{{true, 3}, {true, 0}, {false, 0}}) {
    SCOPED_TRACE(testing::Message() << "causal " << causal << " window " << window);
    OpSignature op = fp32(KernelKind::kFlashAttention, OpPass::kForward);
    op.attention = AttentionDims{1, 4, 2, 4, 5, 5, window};
    op.causal = causal;
    OperandBuffers f(op);
    const auto& a = op.attention;
    const Vec q = as_double(f.as<float>(0), f.spec(0).elements);
    const Vec k = as_double(f.as<float>(1), f.spec(1).elements);
    const Vec v = as_double(f.as<float>(2), f.spec(2).elements);
    run_cpu(op, f);
    expect_near_all(f.as<float>(3), attention_ref(a, causal, q, k, v), 1e-5);

    OpSignature bop = op;
    bop.pass = OpPass::kBackward;
    OperandBuffers b(bop);
    for (int i : {0, 1, 2}) std::copy_n(f.as<float>(i), f.spec(i).elements, b.as<float>(i));
    std::copy_n(f.as<float>(3), f.spec(3).elements, b.as<float>(3));  // o
    std::copy_n(f.as<float>(4), f.spec(4).elements, b.as<float>(5));  // lse
    const Vec dout = as_double(b.as<float>(4), b.spec(4).elements);
    run_cpu(bop, b);
    expect_near_all(b.as<float>(6),
                    numeric_grad([&](Vec x) { return attention_ref(a, causal, x, k, v); }, q, dout),
                    1e-3);
    expect_near_all(b.as<float>(7),
                    numeric_grad([&](Vec x) { return attention_ref(a, causal, q, x, v); }, k, dout),
                    1e-3);
    expect_near_all(b.as<float>(8),
                    numeric_grad([&](Vec x) { return attention_ref(a, causal, q, k, x); }, v, dout),
                    1e-3);
  }
}

Vec conv_ref(const ConvDims& c, const Vec& x, const Vec& w) {
  const int64_t p = (c.h + 2 * c.padding - c.r) / c.stride + 1,
                q = (c.w + 2 * c.padding - c.s) / c.stride + 1;
  Vec y(static_cast<size_t>(c.n * c.k * p * q), 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k)
      for (int64_t oy = 0; oy < p; ++oy)
        for (int64_t ox = 0; ox < q; ++ox) {
          double s = 0;
          for (int64_t ch = 0; ch < c.c; ++ch)
            for (int64_t r = 0; r < c.r; ++r)
              for (int64_t t = 0; t < c.s; ++t) {
                const int64_t iy = oy * c.stride - c.padding + r,
                              ix = ox * c.stride - c.padding + t;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                s += x[((n * c.c + ch) * c.h + iy) * c.w + ix] *
                     w[((k * c.c + ch) * c.r + r) * c.s + t];
              }
          y[((n * c.k + k) * p + oy) * q + ox] = s;
        }
  return y;
}

TEST(CpuKernelsMore, ConvolutionMatchesTheDirectSumInEveryPass) {
  const ConvDims c{2, 3, 6, 5, 4, 3, 3, 2, 1};
  OpSignature op = fp32(KernelKind::kConv, OpPass::kForward);
  op.conv = c;
  OperandBuffers f(op);
  const Vec x = as_double(f.as<float>(0), f.spec(0).elements);
  const Vec w = as_double(f.as<float>(1), f.spec(1).elements);
  run_cpu(op, f);
  expect_near_all(f.as<float>(2), conv_ref(c, x, w), 1e-5);

  OpSignature data = op;
  data.pass = OpPass::kBackwardData;
  OperandBuffers d(data);
  std::copy_n(f.as<float>(1), f.spec(1).elements, d.as<float>(1));
  const Vec dy = as_double(d.as<float>(0), d.spec(0).elements);
  run_cpu(data, d);
  expect_near_all(d.as<float>(2), numeric_grad([&](Vec v) { return conv_ref(c, v, w); }, x, dy),
                  1e-3);

  OpSignature weight = op;
  weight.pass = OpPass::kBackwardWeight;
  OperandBuffers g(weight);
  std::copy_n(d.as<float>(0), d.spec(0).elements, g.as<float>(0));
  std::copy_n(f.as<float>(0), f.spec(0).elements, g.as<float>(1));
  std::fill_n(g.as<float>(2), g.spec(2).elements, 0.0f);
  run_cpu(weight, g);
  expect_near_all(g.as<float>(2), numeric_grad([&](Vec v) { return conv_ref(c, x, v); }, w, dy),
                  1e-3);
}

Vec batch_norm_ref(const Vec& x, const Vec& gamma, const Vec& beta, int64_t rows, int64_t width) {
  Vec y(x.size());
  for (int64_t c = 0; c < width; ++c) {
    double mu = 0, var = 0;
    for (int64_t r = 0; r < rows; ++r) mu += x[r * width + c];
    mu /= rows;
    for (int64_t r = 0; r < rows; ++r) var += (x[r * width + c] - mu) * (x[r * width + c] - mu);
    var /= rows;
    for (int64_t r = 0; r < rows; ++r)
      y[r * width + c] = (x[r * width + c] - mu) / std::sqrt(var + 1e-5) * gamma[c] + beta[c];
  }
  return y;
}

TEST(CpuKernelsMore, BatchNormForwardAndBackward) {
  const int64_t rows = 6, width = 3;
  OpSignature op = fp32(KernelKind::kBatchNorm, OpPass::kForward);
  op.rows = rows;
  op.width = width;
  OperandBuffers f(op);
  const Vec x = as_double(f.as<float>(0), rows * width), gamma = as_double(f.as<float>(1), width),
            beta = as_double(f.as<float>(2), width);
  run_cpu(op, f);
  expect_near_all(f.as<float>(3), batch_norm_ref(x, gamma, beta, rows, width), 1e-4);
  OpSignature bop = op;
  bop.pass = OpPass::kBackward;
  OperandBuffers b(bop);
  std::copy_n(f.as<float>(0), rows * width, b.as<float>(1));
  std::copy_n(f.as<float>(1), width, b.as<float>(2));
  std::copy_n(f.as<float>(4), width, b.as<float>(3));
  std::copy_n(f.as<float>(5), width, b.as<float>(4));
  std::fill_n(b.as<float>(6), width, 0.0f);
  std::fill_n(b.as<float>(7), width, 0.0f);
  const Vec dy = as_double(b.as<float>(0), rows * width);
  run_cpu(bop, b);
  expect_near_all(
      b.as<float>(5),
      numeric_grad([&](Vec v) { return batch_norm_ref(v, gamma, beta, rows, width); }, x, dy),
      2e-3);
  expect_near_all(
      b.as<float>(6),
      numeric_grad([&](Vec v) { return batch_norm_ref(x, v, beta, rows, width); }, gamma, dy),
      2e-3);
  expect_near_all(
      b.as<float>(7),
      numeric_grad([&](Vec v) { return batch_norm_ref(x, gamma, v, rows, width); }, beta, dy),
      2e-3);
}

TEST(CpuKernelsMore, PoolingReducesItsWindowAsTheWorkloadCountedIt) {
  // A 3 x 3 stride-2 max pool's counts: 4 inputs per output, 9 compares each.
  OpSignature op = fp32(KernelKind::kPool, OpPass::kForward);
  op.rows = 2;
  op.width = 8;
  op.bytes = (2.0 * 32 + 2.0 * 8) * 4;
  op.flops = 2.0 * 8 * 9;
  ASSERT_EQ(pool_input_width(op), 32);
  ASSERT_EQ(pool_window(op), 9);
  OperandBuffers f(op);
  run_cpu(op, f);
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t o = 0; o < 8; ++o) {
      const float* x = f.as<float>(0) + r * 32;
      const int64_t first = o * 4, last = std::min<int64_t>(32, first + 9);
      EXPECT_EQ(f.as<float>(1)[r * 8 + o], *std::max_element(x + first, x + last));
    }
  }
  OpSignature bop = op;
  bop.pass = OpPass::kBackward;
  bop.bytes = 2 * op.bytes;
  OperandBuffers b(bop);
  run_cpu(bop, b);
  EXPECT_FLOAT_EQ(b.as<float>(1)[5], b.as<float>(0)[1] / 4);  // input 5 lies in output 1's share
}

TEST(CpuKernelsMore, RouterScoresTokensOverExpertsAndBackpropagates) {
  OpSignature op = fp32(KernelKind::kRouter, OpPass::kForward);
  op.gemm = {3, 4, 5, 1, false, true};  // 3 tokens, 4 experts, hidden 5
  OperandBuffers f(op);
  const Vec x = as_double(f.as<float>(0), 15), w = as_double(f.as<float>(1), 20);
  const auto ref = [](const Vec& xv, const Vec& wv) {
    Vec p(12);
    for (int t = 0; t < 3; ++t) {
      double mx = -1e300, sum = 0;
      for (int e = 0; e < 4; ++e) {
        double s = 0;
        for (int h = 0; h < 5; ++h) s += xv[t * 5 + h] * wv[e * 5 + h];
        p[t * 4 + e] = s;
        mx = std::max(mx, s);
      }
      for (int e = 0; e < 4; ++e) sum += (p[t * 4 + e] = std::exp(p[t * 4 + e] - mx));
      for (int e = 0; e < 4; ++e) p[t * 4 + e] /= sum;
    }
    return p;
  };
  run_cpu(op, f);
  expect_near_all(f.as<float>(2), ref(x, w), 1e-5);
  OpSignature bop = op;
  bop.pass = OpPass::kBackward;
  OperandBuffers b(bop);
  std::copy_n(f.as<float>(2), 12, b.as<float>(1));
  std::copy_n(f.as<float>(0), 15, b.as<float>(2));
  std::copy_n(f.as<float>(1), 20, b.as<float>(3));
  std::fill_n(b.as<float>(5), 20, 0.0f);
  const Vec dp = as_double(b.as<float>(0), 12);
  run_cpu(bop, b);
  expect_near_all(b.as<float>(4), numeric_grad([&](Vec v) { return ref(v, w); }, x, dp), 1e-3);
  expect_near_all(b.as<float>(5), numeric_grad([&](Vec v) { return ref(x, v); }, w, dp), 1e-3);
}

TEST(CpuKernelsMore, CastRoundsBf16ToFp8E4m3AndWritesTheTransposedCopy) {
  OpSignature op;
  op.name = "cast";
  op.kind = KernelKind::kCast;
  op.storage = DType::kBf16;
  op.math = DType::kFp32;
  op.rows = 3;
  op.width = 4;
  OperandBuffers b(op);
  run_cpu(op, b);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      uint32_t bits = static_cast<uint32_t>(b.as<uint16_t>(0)[r * 4 + c]) << 16;
      float x;
      std::memcpy(&x, &bits, sizeof x);
      const uint8_t v = b.as<uint8_t>(1)[r * 4 + c];
      EXPECT_EQ(b.as<uint8_t>(2)[c * 3 + r], v);
      // E4M3 keeps 3 mantissa bits: within half a step (1/16 relative) of the input.
      EXPECT_NEAR(cpu::e4m3_to_float(v), x, std::abs(x) / 16 + 0.001) << x;
    }
  }
  EXPECT_EQ(cpu::e4m3_to_float(0x7E), 448.0f);  // the largest finite E4M3
}

}  // namespace
}  // namespace dtsim::kernels
