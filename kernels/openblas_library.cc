// Loading OpenBLAS with dlopen on first use (see openblas_library.h).
#include "kernels/openblas_library.h"

#include "kernels/dynamic_library.h"

namespace dtsim::kernels::openblas_library {

namespace {

OpenBlas load() {
  void* h = dynamic_library::open_or_throw(DTSIM_OPENBLAS_LIBRARY, "OpenBLAS");
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
