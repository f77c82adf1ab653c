// The CUDA backend on a GPU (CTest label gpu; each case skips without a device): cuBLASLt
// GEMMs against the CPU's OpenBLAS GEMM in every layout and storage type, CUPTI timing
// them, and a CUDA sweep into a cost database.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "calibration/calibrate.h"
#include "calibration/cupti_timer.h"
#include "kernels/cpu_kernels.h"
#include "kernels/cuda_backend.h"

namespace dtsim {
namespace {

#define SKIP_WITHOUT_GPU()                \
  if (kernels::cuda_device_count() == 0)  \
  GTEST_SKIP() << "no CUDA device here (" \
               << (kernels::cuda_built() ? "built with CUDA" : "built without CUDA") << ")"

OpSignature gemm(GemmDims g, DType storage, DType math, OpPass pass = OpPass::kForward) {
  OpSignature op;
  op.name = "gemm";
  op.kind = g.batch > 1 ? KernelKind::kBatchedGemm : KernelKind::kGemm;
  op.pass = pass;
  op.storage = storage;
  op.math = math;
  op.gemm = g;
  op.flops = g.flops();
  return op;
}

std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / 16777216.0f * 2 - 1;
  }
  return v;
}

TEST(CudaGemm, MatchesTheCpuGemmInEveryLayoutAndStorageType) {
  SKIP_WITHOUT_GPU();
  const std::vector<GemmDims> shapes = {{64, 48, 32, 1, false, true},
                                        {64, 48, 32, 1, true, false},
                                        {64, 48, 32, 1, false, false},
                                        {64, 48, 32, 1, true, true},
                                        {32, 32, 16, 4, false, true}};
  // fp32 exactly, tf32 and the 16-bit types to their mantissas (K = 32 products summed).
  const std::vector<std::tuple<DType, DType, double>> types = {{DType::kFp32, DType::kFp32, 1e-4},
                                                               {DType::kFp32, DType::kTf32, 2e-2},
                                                               {DType::kFp16, DType::kFp16, 2e-2},
                                                               {DType::kBf16, DType::kBf16, 8e-2}};
  for (const GemmDims& g : shapes) {
    for (const auto& [storage, math, tol] : types) {
      SCOPED_TRACE(testing::Message() << g.m << "x" << g.n << "x" << g.k << " b" << g.batch << " ta"
                                      << g.transpose_a << " tb" << g.transpose_b << " "
                                      << dtype_name(storage) << "/" << dtype_name(math));
      kernels::CudaGemm gpu(gemm(g, storage, math));
      const auto a = values(static_cast<size_t>(g.batch * g.m * g.k), 1);
      const auto b = values(static_cast<size_t>(g.batch * g.k * g.n), 2);
      gpu.upload(a, b);
      gpu.launch();
      gpu.synchronize();
      const std::vector<float> got = gpu.download_c();
      std::vector<float> want(got.size());
      kernels::cpu::gemm(g, false, a.data(), b.data(), want.data());
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
      }
    }
  }
}

TEST(CuptiTimer, TimesGemmsFromTheGpusTimestamps) {
  SKIP_WITHOUT_GPU();
  calibration::CuptiTimer timer;
  kernels::CudaGemm small(gemm({256, 256, 256, 1, false, true}, DType::kBf16, DType::kBf16));
  kernels::CudaGemm big(gemm({4096, 4096, 4096, 1, false, true}, DType::kBf16, DType::kBf16));
  const auto t_small = timer.time([&] { small.launch(); }, [&] { small.flush_l2(); }, 5);
  const auto t_big = timer.time([&] { big.launch(); }, [&] { big.flush_l2(); }, 5);
  ASSERT_EQ(t_small.size(), 5u);
  for (double s : t_small) EXPECT_GT(s, 0);
  // 4,096x more work takes far longer, and the big GEMM runs near the bf16 peak (< 10x it).
  EXPECT_GT(t_big[2], 20 * t_small[2]);
  EXPECT_EQ(timer.dropped_records(), 0u);
}

TEST(CudaSweep, MeasuresGemmsAndRefusesWhatItCannotRun) {
  SKIP_WITHOUT_GPU();
  OpSignature norm;
  norm.name = "attn.norm";
  norm.kind = KernelKind::kLayerNorm;
  norm.rows = 64;
  norm.width = 64;
  calibration::SweepOptions options;
  options.policy.max_repeats = 10;
  const calibration::SweepResult r = calibration::sweep_cuda(
      {gemm({512, 512, 512, 1, false, true}, DType::kBf16, DType::kBf16), norm},
      calibration::cuda_identity("H200"), options);
  ASSERT_EQ(r.db.entries.size(), 1u);
  EXPECT_GT(r.db.entries[0].stats.median_s, 0);
  ASSERT_EQ(r.refused.size(), 1u);
  EXPECT_NE(r.refused[0].find("GEMMs only"), std::string::npos);
  EXPECT_EQ(r.db.device.backend, "cuda");
  EXPECT_EQ(r.db.device.timer, "cupti");
  EXPECT_GT(r.db.device.sm_count, 0);
}

TEST(CudaBackend, SaysWhyWhenItCannotRun) {
  // Runs everywhere: without the backend or a device the reasons are sentences, not crashes.
  if (!kernels::cuda_built()) {
    EXPECT_NE(kernels::cuda_unsupported_reason(OpSignature{}).find("without a CUDA toolkit"),
              std::string::npos);
    EXPECT_THROW(calibration::CuptiTimer{}, std::runtime_error);
    return;
  }
  OpSignature fp8 = gemm({16, 16, 16, 1, false, true}, DType::kFp8, DType::kFp8);
  EXPECT_NE(kernels::cuda_unsupported_reason(fp8).find("FP8"), std::string::npos);
  if (kernels::cuda_device_count() == 0) {
    EXPECT_NE(calibration::cupti_unavailable_reason().find("no CUDA device"), std::string::npos);
    EXPECT_THROW(calibration::CuptiTimer{}, std::runtime_error);
  }
}

}  // namespace
}  // namespace dtsim
