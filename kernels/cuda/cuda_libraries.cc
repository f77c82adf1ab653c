// Loading cuBLASLt, cuDNN and NCCL with dlopen on first use (see cuda_libraries.h).
#include "kernels/cuda/cuda_libraries.h"

#include <dlfcn.h>

#include "kernels/dynamic_library.h"

namespace dtsim::kernels::cuda_libraries {

namespace {

using dynamic_library::bind;

CublasLt load_cublaslt() {
  void* h = dynamic_library::open_or_throw(DTSIM_CUBLASLT_LIBRARY, "cuBLASLt");
  const char* lib = DTSIM_CUBLASLT_LIBRARY;
  CublasLt f{};
  bind(h, lib, "cublasLtCreate", f.create);
  bind(h, lib, "cublasLtDestroy", f.destroy);
  bind(h, lib, "cublasLtGetVersion", f.get_version);
  bind(h, lib, "cublasLtMatmul", f.matmul);
  bind(h, lib, "cublasLtMatmulAlgoGetHeuristic", f.algo_get_heuristic);
  bind(h, lib, "cublasLtMatmulDescCreate", f.desc_create);
  bind(h, lib, "cublasLtMatmulDescDestroy", f.desc_destroy);
  bind(h, lib, "cublasLtMatmulDescSetAttribute", f.desc_set_attribute);
  bind(h, lib, "cublasLtMatmulPreferenceCreate", f.preference_create);
  bind(h, lib, "cublasLtMatmulPreferenceDestroy", f.preference_destroy);
  bind(h, lib, "cublasLtMatmulPreferenceSetAttribute", f.preference_set_attribute);
  bind(h, lib, "cublasLtMatrixLayoutCreate", f.layout_create);
  bind(h, lib, "cublasLtMatrixLayoutDestroy", f.layout_destroy);
  bind(h, lib, "cublasLtMatrixLayoutSetAttribute", f.layout_set_attribute);
  return f;
}

// `name` of the library at `path` returns a version number; "" when it cannot be had.
std::string version_from(const char* path, const char* name, bool status_and_out) {
  std::string why;
  void* h = path[0] != '\0' ? dynamic_library::open(path, why) : nullptr;
  if (h == nullptr) return "";
  void* symbol = dlsym(h, name);
  if (symbol == nullptr) return "";
  if (status_and_out) {  // ncclResult_t ncclGetVersion(int*): 0 is ncclSuccess
    int v = 0;
    return reinterpret_cast<int (*)(int*)>(symbol)(&v) == 0 ? std::to_string(v) : "";
  }
  return std::to_string(reinterpret_cast<size_t (*)()>(symbol)());  // size_t cudnnGetVersion()
}

}  // namespace

const CublasLt& cublaslt() {
  // A failed load throws out of the initializer, so the next call tries again.
  static const CublasLt functions = load_cublaslt();
  return functions;
}

std::string cudnn_version() { return version_from(DTSIM_CUDNN_LIBRARY, "cudnnGetVersion", false); }

std::string nccl_version() { return version_from(DTSIM_NCCL_LIBRARY, "ncclGetVersion", true); }

}  // namespace dtsim::kernels::cuda_libraries
