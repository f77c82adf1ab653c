// reference_kernel_s: one GEMM, measured with the sweep's discipline minus its retries.
#include "calibration/speed_reference.h"

#include "calibration/kernel_timer.h"
#include "calibration/measure.h"
#include "calibration/sample_stats.h"
#include "kernels/kernel.h"

namespace dtsim::calibration {

double reference_kernel_s() {
  OpSignature g;
  g.name = "speed reference";
  g.kind = KernelKind::kGemm;
  g.storage = g.math = DType::kFp32;
  g.gemm = {384, 384, 384, 1, false, false};
  g.flops = g.gemm.flops();
  MeasurementPolicy policy;
  policy.warmup = 3;
  policy.round = 15;
  policy.max_repeats = 15;  // one round: a reference is a moment, not a converged figure
  SteadyClockTimer timer;
  CacheFlusher flusher;
  // One BLAS thread whatever the caller runs with, so that every reference is the same work.
  struct OneThread {
    int before = kernels::cpu_threads();
    OneThread() { kernels::set_cpu_threads(1); }
    ~OneThread() { kernels::set_cpu_threads(before); }
  } one_thread;
  return measure_cpu_op(g, timer, &flusher, policy).stats.median_s;
}

}  // namespace dtsim::calibration
