// Every CPU kernel against a naive reference: forwards against a double-precision loop,
// backwards against the finite-difference gradient of that loop's scalar loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "kernels/kernel.h"
#include "tests/kernels/reference.h"

namespace dtsim::kernels {
namespace {

using namespace test;

OpSignature rows_op(KernelKind kind, OpPass pass, int64_t rows, int64_t width) {
  OpSignature op;
  op.name = "t";
  op.kind = kind;
  op.pass = pass;
  op.storage = op.math = DType::kFp32;
  op.rows = rows;
  op.width = width;
  op.bytes = 2.0 * static_cast<double>(rows * width) * 4;  // read one, write one
  return op;
}

std::vector<double> naive_gemm(const GemmDims& g, const std::vector<double>& a,
                               const std::vector<double>& b) {
  std::vector<double> c(static_cast<size_t>(g.batch * g.m * g.n), 0.0);
  for (int64_t p = 0; p < g.batch; ++p) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          const double av = g.transpose_a ? a[p * g.m * g.k + l * g.m + i] : a[p * g.m * g.k + i * g.k + l];
          const double bv = g.transpose_b ? b[p * g.k * g.n + j * g.k + l] : b[p * g.k * g.n + l * g.n + j];
          s += av * bv;
        }
        c[p * g.m * g.n + i * g.n + j] = s;
      }
    }
  }
  return c;
}

TEST(CpuKernels, GemmsOfEveryLayoutAndPassMatchTheNaiveProduct) {
  set_cpu_threads(1);
  // A linear layer's forward (weights [out, in], transposed), both of its backward GEMMs,
  // every transpose combination and a batch of attention's QK^T.
  GemmDims linear{7, 5, 3, 1, false, true};
  std::vector<GemmDims> shapes = {linear, backward_data_gemm(linear), backward_weight_gemm(linear),
                                  {4, 6, 5, 1, true, false},  {4, 6, 5, 1, true, true},
                                  {4, 6, 5, 1, false, false}, {8, 8, 4, 3, false, true}};
  for (const GemmDims& g : shapes) {
    for (OpPass pass : {OpPass::kForward, OpPass::kBackwardWeight}) {
      OpSignature op;
      op.name = "gemm";
      op.kind = g.batch > 1 ? KernelKind::kBatchedGemm : KernelKind::kGemm;
      op.pass = pass;
      op.storage = op.math = DType::kFp32;
      op.gemm = g;
      OperandBuffers b(op);
      ASSERT_EQ(b.size(), 3u);
      const auto a = as_double(b.as<float>(0), b.spec(0).elements);
      const auto bb = as_double(b.as<float>(1), b.spec(1).elements);
      const auto before = as_double(b.as<float>(2), b.spec(2).elements);
      run_cpu(op, b);
      auto want = naive_gemm(g, a, bb);
      // A linear layer's weight gradient accumulates into what the buffer held.
      const bool accumulates = pass == OpPass::kBackwardWeight && op.kind == KernelKind::kGemm;
      for (size_t i = 0; i < want.size(); ++i) want[i] += accumulates ? before[i] : 0;
      SCOPED_TRACE(testing::Message() << g.m << "x" << g.n << "x" << g.k << " batch " << g.batch
                                      << " ta " << g.transpose_a << " tb " << g.transpose_b);
      expect_near_all(b.as<float>(2), want, 1e-5);
    }
  }
}

std::vector<double> layer_norm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                                   const std::vector<double>& beta, int64_t rows, int64_t width) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < width; ++i) mu += x[r * width + i];
    mu /= width;
    for (int64_t i = 0; i < width; ++i) var += (x[r * width + i] - mu) * (x[r * width + i] - mu);
    var /= width;
    for (int64_t i = 0; i < width; ++i) {
      y[r * width + i] = (x[r * width + i] - mu) / std::sqrt(var + 1e-5) * gamma[i] + beta[i];
    }
  }
  return y;
}

TEST(CpuKernels, LayerNormForwardAndBackward) {
  const int64_t rows = 3, width = 8;
  OperandBuffers fwd(rows_op(KernelKind::kLayerNorm, OpPass::kForward, rows, width));
  const auto x = as_double(fwd.as<float>(0), rows * width);
  const auto gamma = as_double(fwd.as<float>(1), width);
  const auto beta = as_double(fwd.as<float>(2), width);
  run_cpu(rows_op(KernelKind::kLayerNorm, OpPass::kForward, rows, width), fwd);
  expect_near_all(fwd.as<float>(3), layer_norm_ref(x, gamma, beta, rows, width), 1e-4);

  const OpSignature bop = rows_op(KernelKind::kLayerNorm, OpPass::kBackward, rows, width);
  OperandBuffers bwd(bop);
  // The backward reads the forward's x, gamma, mean and rstd.
  std::copy_n(fwd.as<float>(0), rows * width, bwd.as<float>(1));
  std::copy_n(fwd.as<float>(1), width, bwd.as<float>(2));
  std::copy_n(fwd.as<float>(4), rows, bwd.as<float>(3));
  std::copy_n(fwd.as<float>(5), rows, bwd.as<float>(4));
  std::fill_n(bwd.as<float>(6), width, 0.0f);
  std::fill_n(bwd.as<float>(7), width, 0.0f);
  const auto dy = as_double(bwd.as<float>(0), rows * width);
  run_cpu(bop, bwd);
  const auto dx = numeric_grad([&](std::vector<double> v) { return layer_norm_ref(v, gamma, beta, rows, width); },
                               x, dy);
  expect_near_all(bwd.as<float>(5), dx, 1e-3);
  const auto dgamma = numeric_grad([&](std::vector<double> g) { return layer_norm_ref(x, g, beta, rows, width); },
                                   gamma, dy);
  expect_near_all(bwd.as<float>(6), dgamma, 1e-3);
  const auto dbeta = numeric_grad([&](std::vector<double> bt) { return layer_norm_ref(x, gamma, bt, rows, width); },
                                  beta, dy);
  expect_near_all(bwd.as<float>(7), dbeta, 1e-3);
}

std::vector<double> rms_norm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                                 int64_t rows, int64_t width) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int64_t i = 0; i < width; ++i) sq += x[r * width + i] * x[r * width + i];
    const double rs = 1 / std::sqrt(sq / width + 1e-5);
    for (int64_t i = 0; i < width; ++i) y[r * width + i] = x[r * width + i] * rs * gamma[i];
  }
  return y;
}

TEST(CpuKernels, RmsNormForwardAndBackward) {
  const int64_t rows = 2, width = 6;
  const OpSignature fop = rows_op(KernelKind::kRmsNorm, OpPass::kForward, rows, width);
  OperandBuffers fwd(fop);
  const auto x = as_double(fwd.as<float>(0), rows * width);
  const auto gamma = as_double(fwd.as<float>(1), width);
  run_cpu(fop, fwd);
  expect_near_all(fwd.as<float>(2), rms_norm_ref(x, gamma, rows, width), 1e-4);
  const OpSignature bop = rows_op(KernelKind::kRmsNorm, OpPass::kBackward, rows, width);
  OperandBuffers bwd(bop);
  std::copy_n(fwd.as<float>(0), rows * width, bwd.as<float>(1));
  std::copy_n(fwd.as<float>(1), width, bwd.as<float>(2));
  std::copy_n(fwd.as<float>(3), rows, bwd.as<float>(3));
  std::fill_n(bwd.as<float>(5), width, 0.0f);
  const auto dy = as_double(bwd.as<float>(0), rows * width);
  run_cpu(bop, bwd);
  expect_near_all(bwd.as<float>(4),
                  numeric_grad([&](std::vector<double> v) { return rms_norm_ref(v, gamma, rows, width); }, x, dy),
                  1e-3);
  expect_near_all(bwd.as<float>(5),
                  numeric_grad([&](std::vector<double> g) { return rms_norm_ref(x, g, rows, width); }, gamma, dy),
                  1e-3);
}

std::vector<double> softmax_ref(const std::vector<double>& x, int64_t rows, int64_t width) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e300, sum = 0;
    for (int64_t i = 0; i < width; ++i) mx = std::max(mx, x[r * width + i]);
    for (int64_t i = 0; i < width; ++i) sum += std::exp(x[r * width + i] - mx);
    for (int64_t i = 0; i < width; ++i) y[r * width + i] = std::exp(x[r * width + i] - mx) / sum;
  }
  return y;
}

TEST(CpuKernels, SoftmaxForwardAndBackward) {
  const int64_t rows = 3, width = 7;
  const OpSignature fop = rows_op(KernelKind::kSoftmax, OpPass::kForward, rows, width);
  OperandBuffers fwd(fop);
  const auto x = as_double(fwd.as<float>(0), rows * width);
  run_cpu(fop, fwd);
  expect_near_all(fwd.as<float>(1), softmax_ref(x, rows, width), 1e-5);
  const OpSignature bop = rows_op(KernelKind::kSoftmax, OpPass::kBackward, rows, width);
  OperandBuffers bwd(bop);
  std::copy_n(fwd.as<float>(1), rows * width, bwd.as<float>(0));
  const auto dy = as_double(bwd.as<float>(1), rows * width);
  run_cpu(bop, bwd);
  expect_near_all(bwd.as<float>(2),
                  numeric_grad([&](std::vector<double> v) { return softmax_ref(v, rows, width); }, x, dy),
                  1e-4);
}

// A pointwise activation f: forward against f, backward against its numeric derivative.
void check_activation(KernelKind kind, const std::function<double(double)>& f) {
  const int64_t n = 64;
  const OpSignature fop = rows_op(kind, OpPass::kForward, 1, n);
  OperandBuffers fwd(fop);
  const auto x = as_double(fwd.as<float>(0), n);
  run_cpu(fop, fwd);
  const auto apply = [&](std::vector<double> v) {
    for (double& e : v) e = f(e);
    return v;
  };
  expect_near_all(fwd.as<float>(1), apply(x), 1e-5);
  const OpSignature bop = rows_op(kind, OpPass::kBackward, 1, n);
  OperandBuffers bwd(bop);
  std::copy_n(fwd.as<float>(0), n, bwd.as<float>(0));
  const auto dy = as_double(bwd.as<float>(1), n);
  run_cpu(bop, bwd);
  expect_near_all(bwd.as<float>(2), numeric_grad(apply, x, dy), 1e-4);
}

TEST(CpuKernels, GeluAndReluForwardAndBackward) {
  check_activation(KernelKind::kGelu, [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  });
  check_activation(KernelKind::kRelu, [](double v) { return v > 0 ? v : 0; });
}

// GeLU's tanh is a rational approximation (data-independent speed): it holds to float
// precision far beyond [-1, 1), where tanh saturates, forward and backward, and keeps
// GeLU's identity gelu(x) - gelu(-x) = x (tanh is odd).
TEST(CpuKernels, GeluHoldsOverTheWholeRange) {
  const int64_t n = 4001;
  const auto ref = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  const OpSignature fop = rows_op(KernelKind::kGelu, OpPass::kForward, 1, n);
  OperandBuffers fwd(fop);
  float* x = fwd.as<float>(0);
  for (int64_t i = 0; i < n; ++i) x[i] = -20.0f + 40.0f * static_cast<float>(i) / (n - 1);
  run_cpu(fop, fwd);
  const float* y = fwd.as<float>(1);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(y[i], ref(x[i]), 2e-6 * std::max(1.0, std::abs(ref(x[i])))) << "at x = " << x[i];
    // x[n - 1 - i] is -x[i]: the grid is symmetric about 0.
    EXPECT_NEAR(y[i] - y[n - 1 - i], x[i], 4e-6 * std::max(1.0f, std::abs(x[i])))
        << "at x = " << x[i];
  }
  const OpSignature bop = rows_op(KernelKind::kGelu, OpPass::kBackward, 1, n);
  OperandBuffers bwd(bop);
  std::copy_n(x, n, bwd.as<float>(0));
  std::fill_n(bwd.as<float>(1), n, 1.0f);
  run_cpu(bop, bwd);
  const float* dx = bwd.as<float>(2);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i], h = 1e-4 * std::max(1.0, std::abs(v));
    EXPECT_NEAR(dx[i], (ref(v + h) - ref(v - h)) / (2 * h), 1e-4) << "at x = " << v;
  }
}

TEST(CpuKernels, SwigluForwardAndBackward) {
  const int64_t n = 32;
  const OpSignature fop = rows_op(KernelKind::kSwiglu, OpPass::kForward, 1, n);
  OperandBuffers fwd(fop);
  const auto gate = as_double(fwd.as<float>(0), n);
  const auto up = as_double(fwd.as<float>(1), n);
  const auto ref = [&](const std::vector<double>& g, const std::vector<double>& u) {
    std::vector<double> y(g.size());
    for (size_t i = 0; i < g.size(); ++i) y[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    return y;
  };
  run_cpu(fop, fwd);
  expect_near_all(fwd.as<float>(2), ref(gate, up), 1e-5);
  const OpSignature bop = rows_op(KernelKind::kSwiglu, OpPass::kBackward, 1, n);
  OperandBuffers bwd(bop);
  std::copy_n(fwd.as<float>(0), n, bwd.as<float>(0));
  std::copy_n(fwd.as<float>(1), n, bwd.as<float>(1));
  const auto dy = as_double(bwd.as<float>(2), n);
  run_cpu(bop, bwd);
  expect_near_all(bwd.as<float>(3), numeric_grad([&](std::vector<double> g) { return ref(g, up); }, gate, dy), 1e-4);
  expect_near_all(bwd.as<float>(4), numeric_grad([&](std::vector<double> u) { return ref(gate, u); }, up, dy), 1e-4);
}

TEST(CpuKernels, DropoutKeepsAboutNinetyPercentAndScalesThem) {
  const int64_t n = 100000;
  const OpSignature fop = rows_op(KernelKind::kDropout, OpPass::kForward, 1, n);
  OperandBuffers fwd(fop);
  run_cpu(fop, fwd);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t m = fwd.as<uint8_t>(2)[i];
    kept += m;
    ASSERT_FLOAT_EQ(fwd.as<float>(1)[i], m ? fwd.as<float>(0)[i] / 0.9f : 0.0f);
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.9, 0.01);
  const OpSignature bop = rows_op(KernelKind::kDropout, OpPass::kBackward, 1, n);
  OperandBuffers bwd(bop);
  std::copy_n(fwd.as<uint8_t>(2), n, bwd.as<uint8_t>(1));
  run_cpu(bop, bwd);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_FLOAT_EQ(bwd.as<float>(2)[i], bwd.as<uint8_t>(1)[i] ? bwd.as<float>(0)[i] / 0.9f : 0.0f);
  }
}

TEST(CpuKernels, ElementwiseAddsTwoTensorsOrABiasAsItsBytesSay) {
  const int64_t rows = 4, width = 5, e = rows * width;
  OpSignature residual = rows_op(KernelKind::kElementwise, OpPass::kForward, rows, width);
  residual.bytes = 3.0 * e * 4;  // a + b = y
  OperandBuffers r(residual);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.spec(1).elements, e);
  run_cpu(residual, r);
  for (int64_t i = 0; i < e; ++i) ASSERT_FLOAT_EQ(r.as<float>(2)[i], r.as<float>(0)[i] + r.as<float>(1)[i]);
  OpSignature bias = rows_op(KernelKind::kElementwise, OpPass::kForward, rows, width);  // x + bias
  OperandBuffers bb(bias);
  EXPECT_EQ(bb.spec(1).elements, width);
  run_cpu(bias, bb);
  for (int64_t i = 0; i < e; ++i) {
    ASSERT_FLOAT_EQ(bb.as<float>(2)[i], bb.as<float>(0)[i] + bb.as<float>(1)[i % width]);
  }
  OpSignature bias_bwd = bias;
  bias_bwd.pass = OpPass::kBackward;
  bias_bwd.bytes = 2 * bias.bytes;
  OperandBuffers g(bias_bwd);
  std::fill_n(g.as<float>(2), width, 0.0f);
  run_cpu(bias_bwd, g);
  for (int64_t c = 0; c < width; ++c) {
    double s = 0;
    for (int64_t row = 0; row < rows; ++row) s += g.as<float>(0)[row * width + c];
    EXPECT_NEAR(g.as<float>(2)[c], s, 1e-5);
  }
}

TEST(CpuKernels, EmbeddingGathersAndScatterAdds) {
  const int64_t rows = 16, width = 4;
  const OpSignature fop = rows_op(KernelKind::kEmbedding, OpPass::kForward, rows, width);
  OperandBuffers fwd(fop);
  run_cpu(fop, fwd);
  const int32_t* ids = fwd.as<int32_t>(1);
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_GE(ids[r], 0);
    ASSERT_LT(ids[r], rows);
    for (int64_t i = 0; i < width; ++i) {
      ASSERT_EQ(fwd.as<float>(2)[r * width + i], fwd.as<float>(0)[ids[r] * width + i]);
    }
  }
  const OpSignature bop = rows_op(KernelKind::kEmbedding, OpPass::kBackward, rows, width);
  OperandBuffers bwd(bop);
  std::fill_n(bwd.as<float>(2), rows * width, 0.0f);
  run_cpu(bop, bwd);
  std::vector<double> want(rows * width, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < width; ++i) want[bwd.as<int32_t>(1)[r] * width + i] += bwd.as<float>(0)[r * width + i];
  }
  expect_near_all(bwd.as<float>(2), want, 1e-6);
}

TEST(CpuKernels, CrossEntropyLossAndItsGradient) {
  const int64_t rows = 3, width = 5;
  const OpSignature fop = rows_op(KernelKind::kCrossEntropy, OpPass::kForward, rows, width);
  OperandBuffers fwd(fop);
  const auto logits = as_double(fwd.as<float>(0), rows * width);
  const int32_t* labels = fwd.as<int32_t>(1);
  run_cpu(fop, fwd);
  const auto mean_loss = [&](std::vector<double> l) {
    const auto p = softmax_ref(l, rows, width);
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) s -= std::log(p[r * width + labels[r]]);
    return std::vector<double>{s / rows};
  };
  const auto p = softmax_ref(logits, rows, width);
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_NEAR(fwd.as<float>(3)[r], -std::log(p[r * width + labels[r]]), 1e-5);
  }
  const OpSignature bop = rows_op(KernelKind::kCrossEntropy, OpPass::kBackward, rows, width);
  OperandBuffers bwd(bop);
  std::copy_n(fwd.as<float>(2), rows * width, bwd.as<float>(0));
  std::copy_n(labels, rows, bwd.as<int32_t>(1));
  run_cpu(bop, bwd);
  expect_near_all(bwd.as<float>(2), numeric_grad(mean_loss, logits, {1.0}), 1e-4);
}

TEST(CpuKernels, AdamWStepMatchesItsFormula) {
  OpSignature op = rows_op(KernelKind::kOptimizerUpdate, OpPass::kStep, 1, 50);
  OperandBuffers b(op);
  const auto g = as_double(b.as<float>(0), 50), p = as_double(b.as<float>(1), 50),
             m = as_double(b.as<float>(2), 50), v = as_double(b.as<float>(3), 50);
  run_cpu(op, b);
  for (int i = 0; i < 50; ++i) {
    const double m1 = 0.9 * m[i] + 0.1 * g[i];
    const double v1 = 0.999 * v[i] + 0.001 * g[i] * g[i];
    const double p1 = p[i] - 1e-3 * ((m1 / 0.1) / (std::sqrt(v1 / 0.001) + 1e-8) + 0.01 * p[i]);
    EXPECT_NEAR(b.as<float>(2)[i], m1, 1e-6);
    EXPECT_NEAR(b.as<float>(3)[i], v1, 1e-6);
    EXPECT_NEAR(b.as<float>(1)[i], p1, 1e-5);
  }
  op.pass = OpPass::kForward;
  EXPECT_NE(cpu_unsupported_reason(op).find("step pass"), std::string::npos);
}

TEST(CpuKernels, CopyMovesItsBytes) {
  OpSignature op;
  op.name = "copy";
  op.kind = KernelKind::kCopy;
  op.bytes = 1000;
  OperandBuffers b(op);
  run_cpu(op, b);
  EXPECT_EQ(std::memcmp(b.data(0), b.data(1), 1000), 0);
}

TEST(CpuKernels, RefusesWhatItCannotRunWithAReason) {
  OpSignature conv = rows_op(KernelKind::kConv, OpPass::kForward, 1, 1);
  conv.name = "conv1";
  EXPECT_NE(cpu_unsupported_reason(conv).find("conv (forward, \"conv1\")"), std::string::npos);
  EXPECT_THROW(OperandBuffers{conv}, UnsupportedOp);
  OpSignature half = rows_op(KernelKind::kLayerNorm, OpPass::kForward, 2, 2);
  half.storage = DType::kBf16;
  EXPECT_NE(cpu_unsupported_reason(half).find("not bf16"), std::string::npos);
  OpSignature other = rows_op(KernelKind::kLayerNorm, OpPass::kForward, 2, 2);
  OperandBuffers wrong(rows_op(KernelKind::kLayerNorm, OpPass::kForward, 2, 3));
  EXPECT_THROW(run_cpu(other, wrong), std::invalid_argument);
}

TEST(CpuKernels, BuffersAreAlignedAndTheBlasNamesItself) {
  OperandBuffers b(rows_op(KernelKind::kSoftmax, OpPass::kForward, 3, 3));
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data(i)) % 64, 0u);
  EXPECT_EQ(b.total_bytes(), 2 * 9 * 4);
  EXPECT_NE(cpu_blas_identity().find("OpenBLAS"), std::string::npos) << cpu_blas_identity();
  set_cpu_threads(1);
  EXPECT_EQ(cpu_threads(), 1);
}

}  // namespace
}  // namespace dtsim::kernels
