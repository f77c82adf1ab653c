// GEMMs on the CPU: OpenBLAS's sgemm, one call per GEMM of a batch.
#include "kernels/cpu_kernels.h"
#include "kernels/kernel.h"
#include "kernels/openblas_library.h"

namespace dtsim::kernels::cpu {

void gemm(const GemmDims& g, bool accumulate, const float* a, const float* b, float* c) {
  // Row-major A[m, k] (stored [k, m] when transposed) and B[k, n] (stored [n, k]).
  const auto m = static_cast<blasint>(g.m), n = static_cast<blasint>(g.n),
             k = static_cast<blasint>(g.k);
  const blasint lda = g.transpose_a ? m : k;
  const blasint ldb = g.transpose_b ? k : n;
  const auto sgemm = openblas_library::openblas().sgemm;
  for (int64_t i = 0; i < g.batch; ++i) {
    sgemm(CblasRowMajor, g.transpose_a ? CblasTrans : CblasNoTrans,
          g.transpose_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a + i * g.m * g.k, lda,
          b + i * g.k * g.n, ldb, accumulate ? 1.0f : 0.0f, c + i * g.m * g.n, n);
  }
}

}  // namespace dtsim::kernels::cpu

namespace dtsim::kernels {

void set_cpu_threads(int threads) { openblas_library::openblas().set_num_threads(threads); }
int cpu_threads() { return openblas_library::openblas().get_num_threads(); }

std::string cpu_blas_identity() {
  // openblas_get_config: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"
  std::string id = openblas_library::openblas().get_config();
  while (!id.empty() && id.back() == ' ') id.pop_back();
  return id;
}

void load_cpu_blas() { openblas_library::openblas(); }

}  // namespace dtsim::kernels
