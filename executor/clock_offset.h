// A rank's clock against rank 0's, from ping-pong samples (Cristian's algorithm, as NTP
// does it): the sample with the shortest round trip bounds the offset best.
#pragma once

#include <cstdint>
#include <span>

namespace dtsim::executor {

// One exchange: this rank's clock when it sent the ping, the reference's clock when it
// answered, and this rank's clock when the answer arrived (nanoseconds).
struct ClockSample {
  int64_t sent_ns = 0;
  int64_t reference_ns = 0;
  int64_t received_ns = 0;
};

// reference time = local time + offset_ns, within +- uncertainty_ns (half the shortest round
// trip: the answer was stamped somewhere inside it).
struct ClockOffset {
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;
  int samples = 0;
};

// Throws std::invalid_argument without samples or with one that arrived before it was sent.
ClockOffset estimate_clock_offset(std::span<const ClockSample> samples);

}  // namespace dtsim::executor
