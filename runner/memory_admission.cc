// Memory admission from /proc: MemAvailable for the machine, statm for this process.
#include "runner/memory_admission.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>

namespace dtsim {

namespace {

uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

// A number from a cgroup file; nothing for "max" (no limit) or an unreadable file.
std::optional<uint64_t> cgroup_number(const std::string& path) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

// The room left under this process's memory cgroup limit (v2 memory.max, or v1
// memory.limit_in_bytes, whichever the machine mounts): a container's limit, which
// MemAvailable does not show. Nothing when there is no limit.
std::optional<uint64_t> cgroup_room() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    // "0::/path" (v2) or "4:memory:/path" (v1)
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::optional<uint64_t> limit, usage;
    if (controllers.empty()) {
      limit = cgroup_number("/sys/fs/cgroup" + path + "/memory.max");
      usage = cgroup_number("/sys/fs/cgroup" + path + "/memory.current");
    } else if (controllers == "memory" || controllers.find("memory,") != std::string::npos ||
               controllers.find(",memory") != std::string::npos) {
      const std::string dir = "/sys/fs/cgroup/" + controllers + path;
      limit = cgroup_number(dir + "/memory.limit_in_bytes");
      usage = cgroup_number(dir + "/memory.usage_in_bytes");
    }
    // v1 says "no limit" with a number near 2^63.
    if (limit && usage && *limit < (uint64_t{1} << 62)) {
      return *limit > *usage ? *limit - *usage : 0;
    }
  }
  return std::nullopt;
}

}  // namespace

uint64_t available_memory_bytes() {
  const uint64_t machine = mem_available();
  const std::optional<uint64_t> room = cgroup_room();
  return room ? std::min(machine, *room) : machine;
}

uint64_t resident_memory_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

uint64_t peak_resident_memory_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "... kB"
  }
  return 0;
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
