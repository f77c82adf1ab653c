// The CUDA backend's GEMMs through cuBLASLt, and the device's identity. Row-major GEMMs are
// run as their column-major transposes: C^T = op(B)^T op(A)^T, so cuBLASLt's "A" is our B.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_libraries.h"
#include "kernels/cuda_backend.h"
#include "kernels/kernel.h"

namespace dtsim::kernels {

namespace {

const cuda_libraries::CublasLt& lt() { return cuda_libraries::cublaslt(); }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
  }
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuBLASLt: ") + what + ": status " +
                             std::to_string(static_cast<int>(s)));
  }
}

std::string version_text(int v, int major_div, int minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / minor_div);
}

bool gemm_kind(KernelKind k) {
  return k == KernelKind::kGemm || k == KernelKind::kBatchedGemm || k == KernelKind::kGroupedGemm;
}

cudaDataType_t storage_type(DType t) {
  switch (t) {
    case DType::kFp16:
      return CUDA_R_16F;
    case DType::kBf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

uint16_t to_half_bits(float f, bool bf16) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if (bf16) return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);  // round to even
  // IEEE half: round to nearest, no subnormals below 2^-14 (our operands are in [-1, 1)).
  const uint32_t sign = (x >> 16) & 0x8000;
  const int exponent = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  const uint32_t mantissa = x & 0x7FFFFF;
  if (exponent <= 0) return static_cast<uint16_t>(sign);
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7C00);
  return static_cast<uint16_t>(sign | (exponent << 10) | ((mantissa + 0x1000) >> 13));
}

float from_half_bits(uint16_t h, bool bf16) {
  uint32_t x;
  if (bf16) {
    x = static_cast<uint32_t>(h) << 16;
  } else {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const int exponent = (h >> 10) & 0x1F;
    const uint32_t mantissa = h & 0x3FF;
    x = exponent == 0 ? sign : sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace

bool cuda_built() { return true; }

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

CudaDeviceInfo cuda_device_info() {
  if (cuda_device_count() == 0) throw std::runtime_error("CUDA: no device found");
  CudaDeviceInfo info;
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  info.name = p.name;
  info.compute_capability = p.major * 10 + p.minor;
  info.sm_count = p.multiProcessorCount;
  info.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  info.l2_bytes = p.l2CacheSize;
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess)
    info.sm_clock_mhz = khz / 1000.0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess) {
    info.memory_clock_mhz = khz / 1000.0;
  }
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) info.driver = version_text(v, 1000, 10);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) info.runtime = version_text(v, 1000, 10);
  info.cublas = std::to_string(lt().get_version());
  info.cudnn = cuda_libraries::cudnn_version();
  info.nccl = cuda_libraries::nccl_version();
  return info;
}

std::string cuda_unsupported_reason(const OpSignature& op) {
  const std::string what = std::string(kernel_kind_name(op.kind)) + " (" +
                           std::string(op_pass_name(op.pass)) + ", \"" + op.name + "\")";
  if (!gemm_kind(op.kind)) return what + ": the CUDA backend runs GEMMs only so far";
  if (op.storage == DType::kFp8 || op.math == DType::kFp8) {
    return what + ": FP8 GEMMs (cuBLASLt's TN layout with scales) are not built yet";
  }
  if (op.storage != DType::kFp32 && op.storage != DType::kFp16 && op.storage != DType::kBf16) {
    return what + ": the CUDA GEMMs store fp32, fp16 or bf16, not " +
           std::string(dtype_name(op.storage));
  }
  const GemmDims& g = op.gemm;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
    return what + ": needs positive m, n, k and batch";
  return "";
}

struct CudaGemm::Impl {
  OpSignature op;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our B), B, C
  cublasLtMatmulHeuristicResult_t heuristic{};
  cudaStream_t stream = nullptr;
  void *dev_a = nullptr, *dev_b = nullptr, *dev_c = nullptr, *workspace = nullptr, *flush = nullptr;
  size_t workspace_bytes = 32u << 20;
  size_t flush_bytes = 0;
  float beta = 0;
  size_t element = 4;

  ~Impl() {
    // cuBLASLt's objects are made after the handle, so with it loaded; none without it.
    if (handle != nullptr) {
      if (a != nullptr) lt().layout_destroy(a);
      if (b != nullptr) lt().layout_destroy(b);
      if (c != nullptr) lt().layout_destroy(c);
      if (desc != nullptr) lt().desc_destroy(desc);
      lt().destroy(handle);
    }
    for (void* p : {dev_a, dev_b, dev_c, workspace, flush}) {
      if (p != nullptr) cudaFree(p);
    }
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

CudaGemm::CudaGemm(const OpSignature& op) : impl_(std::make_unique<Impl>()) {
  if (const std::string why = cuda_unsupported_reason(op); !why.empty()) throw UnsupportedOp(why);
  if (cuda_device_count() == 0) throw std::runtime_error("CUDA: no device found");
  Impl& s = *impl_;
  s.op = op;
  const GemmDims& g = op.gemm;
  const cudaDataType_t type = storage_type(op.storage);
  s.element = op.storage == DType::kFp32 ? 4 : 2;
  const cublasComputeType_t compute = op.storage == DType::kFp32 && op.math == DType::kTf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  // A linear layer's weight gradient accumulates over micro-batches (beta = 1), as on the CPU.
  // A grouped GEMM's are the experts' weights: equal groups, strided-batched.
  s.beta = op.pass == OpPass::kBackwardWeight && op.kind != KernelKind::kBatchedGemm ? 1.0f : 0.0f;
  check(cudaStreamCreate(&s.stream), "cudaStreamCreate");
  check(lt().create(&s.handle), "cublasLtCreate");
  check(lt().desc_create(&s.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t op_a = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // our B
  const cublasOperation_t op_b = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // our A
  check(lt().desc_set_attribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "TRANSA");
  check(lt().desc_set_attribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "TRANSB");
  const auto n = static_cast<uint64_t>(g.n), m = static_cast<uint64_t>(g.m),
             k = static_cast<uint64_t>(g.k);
  // cuBLASLt's A: our B as stored, [n, k] col-major view when not transposed ([k, n] if so).
  check(lt().layout_create(&s.a, type, g.transpose_b ? k : n, g.transpose_b ? n : k,
                           static_cast<int64_t>(g.transpose_b ? k : n)),
        "layout A");
  check(lt().layout_create(&s.b, type, g.transpose_a ? m : k, g.transpose_a ? k : m,
                           static_cast<int64_t>(g.transpose_a ? m : k)),
        "layout B");
  check(lt().layout_create(&s.c, type, n, m, static_cast<int64_t>(n)), "layout C");
  if (g.batch > 1) {
    const auto batch = static_cast<int32_t>(g.batch);
    const int64_t strides[3] = {g.k * g.n, g.m * g.k, g.m * g.n};
    cublasLtMatrixLayout_t layouts[3] = {s.a, s.b, s.c};
    for (int i = 0; i < 3; ++i) {
      check(lt().layout_set_attribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                      sizeof batch),
            "batch");
      check(lt().layout_set_attribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                      &strides[i], sizeof strides[i]),
            "stride");
    }
  }
  check(cudaMalloc(&s.dev_a, static_cast<size_t>(g.batch * g.m * g.k) * s.element), "cudaMalloc A");
  check(cudaMalloc(&s.dev_b, static_cast<size_t>(g.batch * g.k * g.n) * s.element), "cudaMalloc B");
  check(cudaMalloc(&s.dev_c, static_cast<size_t>(g.batch * g.m * g.n) * s.element), "cudaMalloc C");
  check(cudaMemset(s.dev_c, 0, static_cast<size_t>(g.batch * g.m * g.n) * s.element),
        "cudaMemset C");
  check(cudaMalloc(&s.workspace, s.workspace_bytes), "cudaMalloc workspace");
  cublasLtMatmulPreference_t pref = nullptr;
  check(lt().preference_create(&pref), "preference");
  check(lt().preference_set_attribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                      &s.workspace_bytes, sizeof s.workspace_bytes),
        "workspace preference");
  int found = 0;
  const cublasStatus_t h =
      lt().algo_get_heuristic(s.handle, s.desc, s.a, s.b, s.c, s.c, pref, 1, &s.heuristic, &found);
  lt().preference_destroy(pref);
  check(h, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw UnsupportedOp("cuBLASLt has no algorithm for \"" + op.name + "\"");
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  s.flush_bytes = 2 * static_cast<size_t>(p.l2CacheSize);
  check(cudaMalloc(&s.flush, s.flush_bytes), "cudaMalloc L2 flush");
}

CudaGemm::~CudaGemm() = default;

void CudaGemm::launch() {
  Impl& s = *impl_;
  const float alpha = 1.0f;
  check(lt().matmul(s.handle, s.desc, &alpha, s.dev_b, s.a, s.dev_a, s.b, &s.beta, s.dev_c, s.c,
                    s.dev_c, s.c, &s.heuristic.algo, s.workspace, s.workspace_bytes, s.stream),
        "cublasLtMatmul");
}

void CudaGemm::synchronize() {
  check(cudaStreamSynchronize(impl_->stream), "cudaStreamSynchronize");
}

void CudaGemm::flush_l2() {
  check(cudaMemsetAsync(impl_->flush, 0, impl_->flush_bytes, impl_->stream), "L2 flush");
}

void CudaGemm::upload(const std::vector<float>& a, const std::vector<float>& b) {
  Impl& s = *impl_;
  const bool bf16 = s.op.storage == DType::kBf16;
  const auto put = [&](void* dev, const std::vector<float>& v) {
    if (s.element == 4) {
      check(cudaMemcpy(dev, v.data(), v.size() * 4, cudaMemcpyHostToDevice), "upload");
      return;
    }
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = to_half_bits(v[i], bf16);
    check(cudaMemcpy(dev, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "upload");
  };
  put(s.dev_a, a);
  put(s.dev_b, b);
}

std::vector<float> CudaGemm::download_c() {
  Impl& s = *impl_;
  const GemmDims& g = s.op.gemm;
  const auto n = static_cast<size_t>(g.batch * g.m * g.n);
  std::vector<float> out(n);
  if (s.element == 4) {
    check(cudaMemcpy(out.data(), s.dev_c, n * 4, cudaMemcpyDeviceToHost), "download");
    return out;
  }
  std::vector<uint16_t> h(n);
  check(cudaMemcpy(h.data(), s.dev_c, n * 2, cudaMemcpyDeviceToHost), "download");
  for (size_t i = 0; i < n; ++i) out[i] = from_half_bits(h[i], s.op.storage == DType::kBf16);
  return out;
}

}  // namespace dtsim::kernels
