// dlopen and dlsym behind dynamic_library.h's errors that name the file and the function.
#include "kernels/dynamic_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace dtsim::kernels::dynamic_library {

void* open(const char* path, std::string& why) {
  const std::string full(path);
  const std::string name = full.substr(full.find_last_of('/') + 1);
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    why = "cannot load " + name + " (nor " + full + "): " + (e != nullptr ? e : "unknown reason");
  }
  return handle;
}

void* open_or_throw(const char* path, const char* what) {
  std::string why;
  void* handle = open(path, why);
  if (handle == nullptr) throw std::runtime_error(std::string(what) + ": " + why);
  return handle;
}

void* symbol(void* handle, const char* library, const char* name) {
  void* address = dlsym(handle, name);
  if (address == nullptr) {
    throw std::runtime_error(std::string(library) + " has no " + name +
                             " (a library older than the headers dtsim was built with?)");
  }
  return address;
}

}  // namespace dtsim::kernels::dynamic_library
