// cuBLASLt, cuDNN and NCCL loaded when the CUDA backend first needs them, not when dtsim
// starts: linked eagerly, cuBLASLt alone made every dtsim command (`--help` included) hold
// about 145 MB resident from its start and 205 MB at its exit, on machines without a GPU.
#pragma once

#include <cublasLt.h>

#include <string>

namespace dtsim::kernels::cuda_libraries {

// The cuBLASLt entry points the backend calls, typed from the library's own header.
struct CublasLt {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtGetVersion) get_version;
  decltype(&cublasLtMatmul) matmul;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set_attribute;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set_attribute;
};

// Loads cuBLASLt (the library CMake found at configure time) on the first call. Throws
// std::runtime_error naming the file and dlerror()'s reason when it cannot be loaded.
const CublasLt& cublaslt();

// The versions of cuDNN and NCCL found at configure time ("" when either was not found
// then, or cannot be loaded now): a cost database records them with the device.
std::string cudnn_version();
std::string nccl_version();

}  // namespace dtsim::kernels::cuda_libraries
