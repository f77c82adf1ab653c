// Loading OpenBLAS with dlopen on first use (see openblas_library.h).
#include "kernels/openblas_library.h"

#include <stdexcept>
#include <string>

#include "kernels/dynamic_library.h"

namespace dtsim::kernels::openblas_library {

namespace {

OpenBlas load() {
  std::string why;
  void* h = dynamic_library::open(DTSIM_OPENBLAS_LIBRARY, why);
  if (h == nullptr) throw std::runtime_error("OpenBLAS: " + why);
  const char* lib = DTSIM_OPENBLAS_LIBRARY;
  OpenBlas f{};
  dynamic_library::bind(h, lib, "cblas_sgemm", f.sgemm);
  dynamic_library::bind(h, lib, "openblas_set_num_threads", f.set_num_threads);
  dynamic_library::bind(h, lib, "openblas_get_num_threads", f.get_num_threads);
  dynamic_library::bind(h, lib, "openblas_get_config", f.get_config);
  return f;
}

}  // namespace

const OpenBlas& openblas() {
  // A failed load throws out of the initializer, so the next call tries again.
  static const OpenBlas functions = load();
  return functions;
}

}  // namespace dtsim::kernels::openblas_library
