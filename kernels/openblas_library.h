// OpenBLAS loaded when the CPU backend first needs it, not when dtsim starts: linked, its
// pthread build starts a worker per core at load and they spin (sched_yield) for about
// 0.1 s, so every command, a simulation that never runs a GEMM included, took a second
// core from its start. (Commands that time kernels load it early: kernels::load_cpu_blas.)
#pragma once

#include <cblas.h>

namespace dtsim::kernels::openblas_library {

// The OpenBLAS entry points the CPU backend calls, typed from the library's own header.
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm;
  decltype(&openblas_set_num_threads) set_num_threads;
  decltype(&openblas_get_num_threads) get_num_threads;
  decltype(&openblas_get_config) get_config;
};

// Loads OpenBLAS (the file CMake found in pkg-config's folder) on the first call. Throws
// std::runtime_error naming the file and dlerror()'s reason when it cannot be loaded.
const OpenBlas& openblas();

}  // namespace dtsim::kernels::openblas_library
