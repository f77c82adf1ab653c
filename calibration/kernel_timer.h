// How a kernel's time is read: one interface, a steady-clock backend for the CPU (its
// kernels run synchronously on the calling thread) and, on GPUs, CUPTI's activity records.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace dtsim::calibration {

class KernelTimer {
 public:
  virtual ~KernelTimer() = default;
  virtual std::string name() const = 0;
  // Runs `kernel` `repeats` times, calling `between` (untimed) before each run, and returns
  // each run's time in seconds.
  virtual std::vector<double> time(const std::function<void()>& kernel,
                                   const std::function<void()>& between, int repeats) = 0;
};

// std::chrono::steady_clock around each run.
class SteadyClockTimer final : public KernelTimer {
 public:
  std::string name() const override { return "steady_clock"; }
  std::vector<double> time(const std::function<void()>& kernel,
                           const std::function<void()>& between, int repeats) override;
};

// Evicts a cache level between repeats by writing and reading a buffer twice its size, so
// that a kernel does not find its operands where its own previous repeat left them. On a
// CPU the sweep evicts the core's L2, not the shared L3: inside a step the previous
// kernel's outputs (and a small model's weights) are still in the L3, and with the L3
// evicted too this machine's GEMMs ran 1.5 to 2 times slower and three times as noisy
// (docs/cost-database.md). A GPU's L2 is its last level and is evicted whole.
class CacheFlusher {
 public:
  // `bytes` 0: twice the size of cache level `level` as the kernel reports it (sysfs), at
  // least 1 MiB.
  explicit CacheFlusher(size_t bytes = 0, int level = 2);
  void flush();
  size_t bytes() const { return buffer_.size(); }

 private:
  std::vector<unsigned char> buffer_;
  unsigned char sink_ = 0;
};

// The size in bytes of CPU 0's cache of `level` (its data or unified cache) from
// /sys/devices/system/cpu/cpu0/cache, or where a VM has no such folder from the C library
// (sysconf, which reads CPUID); 0 when unknown.
size_t cache_bytes(int level);

}  // namespace dtsim::calibration
