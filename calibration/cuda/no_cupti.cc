// The CUPTI timer in a build without the CUDA backend: it cannot be made.
#include <stdexcept>

#include "calibration/cupti_timer.h"

namespace dtsim::calibration {

std::string cupti_unavailable_reason() {
  return "this dtsim was configured without a CUDA toolkit, so it has no CUPTI tracer";
}
CuptiTimer::CuptiTimer() { throw std::runtime_error(cupti_unavailable_reason()); }
CuptiTimer::~CuptiTimer() = default;
std::vector<double> CuptiTimer::time(const std::function<void()>&, const std::function<void()>&,
                                     int) {
  return {};
}
uint64_t CuptiTimer::dropped_records() const { return 0; }

}  // namespace dtsim::calibration
