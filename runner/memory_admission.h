// Admission of parallel jobs by memory: a job starts only when the machine has as much
// memory available as the hungriest job so far took, so that running N at once never asks
// for more than is there. The first job runs alone, which measures it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace dtsim {

// MemAvailable of /proc/meminfo in bytes, or the room under the memory cgroup's limit when
// that is less (0 when unreadable).
uint64_t available_memory_bytes();
// This process's resident set in bytes (0 when unreadable).
uint64_t resident_memory_bytes();
// The most this process has held resident so far (VmHWM; 0 when unreadable).
uint64_t peak_resident_memory_bytes();

class MemoryAdmission {
 public:
  // Blocks until the job may start: nothing else runs, or the available memory covers the
  // largest growth a finished job showed. Returns the resident size at admission.
  uint64_t admit();
  // The job admitted with resident size `at_admission` ended at `peak` resident bytes; its
  // growth (which includes whatever ran beside it, so it errs high) becomes the reserve
  // when it is the largest seen.
  void release(uint64_t at_admission, uint64_t peak);

  uint64_t reserve() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int running_ = 0;
  bool measured_ = false;
  uint64_t reserve_ = 0;
};

}  // namespace dtsim
