// The one parser for unit strings ("400Gbps", "25GB/s", "1.5us", "80GiB", "312TFLOPS").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/units.h"

namespace dtsim {

// Either a parsed value or a sentence saying what was expected. The caller adds where
// the text came from (file, JSON pointer).
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;
  explicit operator bool() const { return value.has_value(); }
};

// Durations: ns, us, ms, s, min, h  ("1.5us", "30 ms").
Parsed<Duration> parse_duration(std::string_view text);
// Sizes: B, KB, MB, GB, TB (powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024).
Parsed<Bytes> parse_bytes(std::string_view text);
// Rates: bps, Kbps, Mbps, Gbps, Tbps (bits) and B/s, KB/s, MB/s, GB/s, TB/s, GiB/s (bytes).
Parsed<Bandwidth> parse_bandwidth(std::string_view text);
// Compute rates: FLOPS, GFLOPS, TFLOPS, PFLOPS.
Parsed<FlopRate> parse_flop_rate(std::string_view text);
// Operation counts: FLOP, GFLOP, TFLOP, PFLOP (also accepts a bare number).
Parsed<Flops> parse_flops(std::string_view text);

// Human-readable renderings used by summaries and `dtsim list`.
std::string format_duration(Duration d);
std::string format_bytes(Bytes b);
std::string format_bandwidth(Bandwidth bw);
std::string format_flop_rate(FlopRate r);

}  // namespace dtsim
