// The CUDA backend's entry points in a build without a CUDA toolkit: nothing is built, and
// every call that would need a GPU says so.
#include <stdexcept>

#include "kernels/cuda_backend.h"
#include "kernels/kernel.h"

namespace dtsim::kernels {

namespace {
const char* kNotBuilt =
    "this dtsim was configured without a CUDA toolkit (reconfigure with nvcc at "
    "/usr/local/cuda/bin or CMAKE_CUDA_COMPILER set, and DTSIM_CUDA=ON)";
}

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }
CudaDeviceInfo cuda_device_info() { throw std::runtime_error(kNotBuilt); }
std::string cuda_unsupported_reason(const OpSignature&) { return kNotBuilt; }

struct CudaGemm::Impl {};
CudaGemm::CudaGemm(const OpSignature&) { throw UnsupportedOp(kNotBuilt); }
CudaGemm::~CudaGemm() = default;
void CudaGemm::launch() {}
void CudaGemm::synchronize() {}
void CudaGemm::flush_l2() {}
void CudaGemm::upload(const std::vector<float>&, const std::vector<float>&) {}
std::vector<float> CudaGemm::download_c() { return {}; }

}  // namespace dtsim::kernels
