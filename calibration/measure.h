// Measurement discipline for one kernel: warm-up, then rounds of repeats until a round's
// spread is small (a noisy round is measured again), the caches flushed before each repeat.
#pragma once

#include <functional>
#include <vector>

#include "calibration/kernel_timer.h"
#include "calibration/sample_stats.h"
#include "sim/op_signature.h"

namespace dtsim::calibration {

struct MeasurementPolicy {
  int warmup = 2;
  int round = 5;         // repeats per round
  int max_repeats = 40;  // a noisy kernel gets rounds until this many
  double target_cv = 0.05;
  bool flush_caches = true;
};

struct Measurement {
  std::vector<double> samples_s;
  SampleStats stats;
  bool noisy = false;  // no round's spread fell below the policy's target by max_repeats
};

// `between` runs before each repeat, untimed (a cache flush); it may be empty.
Measurement measure(const std::function<void()>& kernel, KernelTimer& timer,
                    const std::function<void()>& between, const MeasurementPolicy& policy);

// The op's CPU kernel (kernels/) on buffers allocated once and reused across repeats.
// Throws kernels::UnsupportedOp.
Measurement measure_cpu_op(const OpSignature& op, KernelTimer& timer, CacheFlusher* flusher,
                           const MeasurementPolicy& policy);

}  // namespace dtsim::calibration
