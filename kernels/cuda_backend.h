// The CUDA backend of the real ops, as far as it is built: GEMMs and batched GEMMs through
// cuBLASLt on device 0, on buffers allocated once. Without a CUDA toolkit at configure time
// the functions say so (cuda_built() is false) and nothing here touches a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/op_signature.h"

namespace dtsim::kernels {

bool cuda_built();
// Devices the CUDA runtime sees; 0 without the backend, a driver or a device.
int cuda_device_count();

// A GPU's identity for a cost database. Throws std::runtime_error without a device.
struct CudaDeviceInfo {
  std::string name;
  int compute_capability = 0;  // 90 for sm_90
  int sm_count = 0;
  double sm_clock_mhz = 0;
  double memory_clock_mhz = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  std::string driver, runtime, cublas, cudnn, nccl;  // versions
};
CudaDeviceInfo cuda_device_info();

// Empty when the CUDA backend runs `op`; otherwise why not, in a sentence.
std::string cuda_unsupported_reason(const OpSignature& op);

// One GEMM (or batched GEMM) of `op` through cuBLASLt, its operands in device memory in
// the op's storage type, its math as the op says (tf32 as cuBLAS's fast-TF32 compute, fp16
// and bf16 with fp32 accumulation). Throws UnsupportedOp (kernel.h) or std::runtime_error.
class CudaGemm {
 public:
  explicit CudaGemm(const OpSignature& op);
  ~CudaGemm();
  CudaGemm(const CudaGemm&) = delete;
  CudaGemm& operator=(const CudaGemm&) = delete;
  void launch();       // enqueues the GEMM on the object's stream
  void synchronize();  // waits for it
  // Evicts the device's L2 before a repeat (a memset of twice its size, on the stream).
  void flush_l2();
  // For tests: operands from and to floats, converted from and to the storage type.
  void upload(const std::vector<float>& a, const std::vector<float>& b);
  std::vector<float> download_c();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtsim::kernels
