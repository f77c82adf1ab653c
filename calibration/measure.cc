// Rounds of repeats until one round's coefficient of variation is under the target.
#include "calibration/measure.h"

#include "kernels/kernel.h"

namespace dtsim::calibration {

Measurement measure(const std::function<void()>& kernel, KernelTimer& timer,
                    const std::function<void()>& between, const MeasurementPolicy& policy) {
  timer.time(kernel, between, policy.warmup);
  Measurement m;
  while (true) {
    const std::vector<double> round = timer.time(kernel, between, policy.round);
    m.samples_s.insert(m.samples_s.end(), round.begin(), round.end());
    m.stats = stats_of(m.samples_s);
    // A steady round ends it: the disturbance that spread an earlier one (another
    // process, a frequency change) has passed. Every sample is kept; the median, which
    // the cost model reads, is robust to the earlier round's outliers.
    if (stats_of(round).cv <= policy.target_cv) break;
    if (static_cast<int>(m.samples_s.size()) >= policy.max_repeats) {
      m.noisy = true;
      break;
    }
  }
  return m;
}

Measurement measure_cpu_op(const OpSignature& op, KernelTimer& timer, CacheFlusher* flusher,
                           const MeasurementPolicy& policy) {
  kernels::OperandBuffers buffers(op);
  std::function<void()> flush;
  if (flusher != nullptr && policy.flush_caches) flush = [flusher] { flusher->flush(); };
  return measure([&] { kernels::run_cpu(op, buffers); }, timer, flush, policy);
}

}  // namespace dtsim::calibration
