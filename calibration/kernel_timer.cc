// The steady-clock timer and the cache flusher.
#include "calibration/kernel_timer.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include <unistd.h>

namespace dtsim::calibration {

std::vector<double> SteadyClockTimer::time(const std::function<void()>& kernel,
                                           const std::function<void()>& between, int repeats) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    if (between) between();
    const auto t0 = std::chrono::steady_clock::now();
    kernel();
    const auto t1 = std::chrono::steady_clock::now();
    out.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return out;
}

size_t cache_bytes(int level) {
  size_t best = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    int at = 0;
    std::string type, text;
    if (!(std::ifstream(dir + "/level") >> at) || at != level) continue;
    if ((std::ifstream(dir + "/type") >> type) && type == "Instruction") continue;
    std::ifstream in(dir + "/size");
    if (!(in >> text) || text.empty()) continue;
    size_t scale = 1;
    if (text.back() == 'K') scale = 1024;
    if (text.back() == 'M') scale = 1024 * 1024;
    if (scale > 1) text.pop_back();
    try {
      best = std::max(best, static_cast<size_t>(std::stoull(text)) * scale);
    } catch (const std::exception&) {
    }
  }
  if (best == 0) {
    const int name = level == 1   ? _SC_LEVEL1_DCACHE_SIZE
                     : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                     : level == 3 ? _SC_LEVEL3_CACHE_SIZE
                                  : -1;
    if (name >= 0) best = static_cast<size_t>(std::max<long>(sysconf(name), 0));
  }
  return best;
}

CacheFlusher::CacheFlusher(size_t bytes, int level)
    : buffer_(bytes > 0 ? bytes : std::max<size_t>(2 * cache_bytes(level), 1u << 20)) {}

void CacheFlusher::flush() {
  // Write every line (evicting what the kernel left), then read one byte a line back so
  // that the writes cannot be elided.
  for (size_t i = 0; i < buffer_.size(); i += 64)
    buffer_[i] = static_cast<unsigned char>(i + sink_);
  unsigned char acc = 0;
  for (size_t i = 0; i < buffer_.size(); i += 64)
    acc = static_cast<unsigned char>(acc + buffer_[i]);
  sink_ = acc;
}

}  // namespace dtsim::calibration
