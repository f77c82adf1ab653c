// estimate_clock_offset: the midpoint of the shortest round trip.
#include "executor/clock_offset.h"

#include <stdexcept>

namespace dtsim::executor {

ClockOffset estimate_clock_offset(std::span<const ClockSample> samples) {
  if (samples.empty()) throw std::invalid_argument("clock offset: no ping-pong samples");
  const ClockSample* best = nullptr;
  for (const ClockSample& s : samples) {
    if (s.received_ns < s.sent_ns) {
      throw std::invalid_argument("clock offset: a sample arrived before it was sent");
    }
    if (!best || s.received_ns - s.sent_ns < best->received_ns - best->sent_ns) best = &s;
  }
  const int64_t round_trip = best->received_ns - best->sent_ns;
  ClockOffset o;
  // The reference stamped its answer at local time sent + round_trip / 2 +- round_trip / 2.
  o.offset_ns = best->reference_ns - (best->sent_ns + round_trip / 2);
  o.uncertainty_ns = (round_trip + 1) / 2;
  o.samples = static_cast<int>(samples.size());
  return o;
}

}  // namespace dtsim::executor
