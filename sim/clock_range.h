// The simulated clock's range: int64 nanoseconds from the start, about 292 years, whose
// last value (Time::infinite()) means "never". Arithmetic on simulated times that would pass
// it is neither a wrap (undefined, and later "event scheduled in the past") nor a silent
// stall, but ClockRangeError, which names what would take that long.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "sim/topology.h"
#include "sim/units.h"

namespace dtsim {

class ClockRangeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// now + span * times, or nullopt when it would reach Time::infinite() or beyond.
inline std::optional<Time> later_within_clock(Time now, Duration span, int64_t times = 1) {
  int64_t total = 0, end = 0;
  if (span.is_infinite() || __builtin_mul_overflow(span.count_ns(), times, &total) ||
      __builtin_add_overflow(now.count_ns(), total, &end) || end == INT64_MAX)
    return std::nullopt;
  return Time::ns(end);
}

// a + b for two spans, or nullopt past the clock.
inline std::optional<Duration> sum_within_clock(Duration a, Duration b) {
  return later_within_clock(a, b);
}

// "1.81e+10", for the figures in the message.
inline std::string format_seconds(double seconds) {
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.3g", seconds);
  return figure;
}

// "... would end after 1.81e+10 s of simulated time, past the clock's range ..."
[[noreturn]] inline void throw_past_clock(const std::string& what, double seconds) {
  throw ClockRangeError(what + " would end after " + format_seconds(seconds) +
                        " s of simulated time, past the clock's range (about 292 years): the "
                        "inputs that make it this slow (a bandwidth near zero, a huge latency "
                        "or size) are beyond what dtsim can simulate");
}

// The sum of a route's link latencies, `latency_of(link)` each, or ClockRangeError when it
// would pass the clock.
template <typename LatencyOf>
Duration route_latency_within_clock(std::span<const LinkId> route, LatencyOf&& latency_of) {
  Duration latency;
  for (LinkId l : route) {
    const Duration link = latency_of(l);
    const auto sum = sum_within_clock(latency, link);
    if (!sum)
      throw_past_clock("the latency of a route of " + std::to_string(route.size()) + " links",
                       latency.seconds() + link.seconds());
    latency = *sum;
  }
  return latency;
}

inline Duration route_latency_within_clock(const Topology& topology,
                                           std::span<const LinkId> route) {
  return route_latency_within_clock(route, [&](LinkId l) { return topology.link(l).latency; });
}

}  // namespace dtsim
