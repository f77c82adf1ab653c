// The GPU's kernel timer: CUPTI's activity records (kernel start and end timestamps taken
// by the GPU), never host clocks. Built with the CUDA backend; without it, constructing one
// throws with the reason.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "calibration/kernel_timer.h"

namespace dtsim::calibration {

// Empty when CUPTI can trace kernels in this process; otherwise why not (no CUDA backend,
// no device, CUPTI refused: another profiler attached, insufficient permissions).
std::string cupti_unavailable_reason();

class CuptiTimer final : public KernelTimer {
 public:
  // Registers the activity buffers and enables concurrent-kernel and memcpy records.
  // Throws std::runtime_error with cupti_unavailable_reason().
  CuptiTimer();
  ~CuptiTimer() override;
  std::string name() const override { return "cupti"; }
  // `kernel` and `between` enqueue GPU work; after each repeat the device is synchronized,
  // CUPTI's buffers are flushed, and the repeat's time is the sum of the durations of the
  // kernels it ran (the work `between` enqueues is memsets, which are not kernels).
  std::vector<double> time(const std::function<void()>& kernel,
                           const std::function<void()>& between, int repeats) override;
  // Records CUPTI could not store (its buffers were full); a sweep reports them.
  uint64_t dropped_records() const;
};

}  // namespace dtsim::calibration
