// Memory admission from /proc: MemAvailable for the machine, statm for this process.
#include "runner/memory_admission.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace dtsim {

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

uint64_t resident_memory_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

uint64_t MemoryAdmission::admit() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    // Until one job has been measured, jobs run one at a time.
    if (running_ == 0) return true;
    return measured_ && available_memory_bytes() >= reserve_;
  });
  ++running_;
  return resident_memory_bytes();
}

void MemoryAdmission::release(uint64_t at_admission, uint64_t peak) {
  {
    std::lock_guard lock(mutex_);
    --running_;
    reserve_ = std::max(reserve_, peak > at_admission ? peak - at_admission : 0);
    measured_ = true;
  }
  changed_.notify_all();
}

uint64_t MemoryAdmission::reserve() const {
  std::lock_guard lock(mutex_);
  return reserve_;
}

}  // namespace dtsim
