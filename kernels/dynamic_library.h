// Shared libraries opened with dlopen when first needed, and their functions bound by name.
#pragma once

#include <string>

namespace dtsim::kernels::dynamic_library {

// The library CMake found at `path`, kept loaded for the process's life; nullptr with `why`
// set. Its file name is searched first, as the dynamic linker would search it had dtsim
// linked it (LD_LIBRARY_PATH: tests/gpu/run_device_checks.sh points it at a device
// machine's CUDA), then `path` itself.
void* open(const char* path, std::string& why);
// The same, throwing std::runtime_error "`what`: why" when it cannot be loaded.
void* open_or_throw(const char* path, const char* what);

// The address of `name` in `handle`. Throws std::runtime_error naming `library` and `name`
// when it has none (a library older than the headers dtsim was built with).
void* symbol(void* handle, const char* library, const char* name);

// `out` = the function `name` of `handle`, typed by the caller from the library's header.
template <typename Function>
void bind(void* handle, const char* library, const char* name, Function& out) {
  out = reinterpret_cast<Function>(symbol(handle, library, name));
}

}  // namespace dtsim::kernels::dynamic_library
