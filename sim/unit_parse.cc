// Unit-string parsing: a number, optional spaces, and a unit from a fixed table.
#include "sim/unit_parse.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace dtsim {
namespace {

struct UnitFactor {
  std::string_view name;
  double factor;  // multiplier to the base unit (ns, bytes, bytes/s, FLOP/s, FLOP)
};

constexpr std::array kDurationUnits{
    UnitFactor{"ns", 1}, UnitFactor{"us", 1e3}, UnitFactor{"µs", 1e3}, UnitFactor{"ms", 1e6},
    UnitFactor{"s", 1e9}, UnitFactor{"min", 60e9}, UnitFactor{"h", 3600e9}};

constexpr std::array kByteUnits{
    UnitFactor{"B", 1},          UnitFactor{"KB", 1e3},         UnitFactor{"MB", 1e6},
    UnitFactor{"GB", 1e9},       UnitFactor{"TB", 1e12},        UnitFactor{"KiB", 1024.0},
    UnitFactor{"MiB", 1048576.0}, UnitFactor{"GiB", 1073741824.0},
    UnitFactor{"TiB", 1099511627776.0}};

constexpr std::array kBandwidthUnits{
    UnitFactor{"bps", 1.0 / 8},   UnitFactor{"Kbps", 1e3 / 8},  UnitFactor{"Mbps", 1e6 / 8},
    UnitFactor{"Gbps", 1e9 / 8},  UnitFactor{"Tbps", 1e12 / 8}, UnitFactor{"B/s", 1},
    UnitFactor{"KB/s", 1e3},      UnitFactor{"MB/s", 1e6},      UnitFactor{"GB/s", 1e9},
    UnitFactor{"TB/s", 1e12},     UnitFactor{"KiB/s", 1024.0},  UnitFactor{"MiB/s", 1048576.0},
    UnitFactor{"GiB/s", 1073741824.0}};

constexpr std::array kFlopRateUnits{
    UnitFactor{"FLOPS", 1}, UnitFactor{"GFLOPS", 1e9}, UnitFactor{"TFLOPS", 1e12},
    UnitFactor{"PFLOPS", 1e15}};

constexpr std::array kFlopUnits{UnitFactor{"FLOP", 1}, UnitFactor{"GFLOP", 1e9},
                                UnitFactor{"TFLOP", 1e12}, UnitFactor{"PFLOP", 1e15},
                                UnitFactor{"EFLOP", 1e18}};

std::string unit_list(const auto& units) {
  std::string out;
  for (const auto& u : units) {
    if (!out.empty()) out += ", ";
    out += u.name;
  }
  return out;
}

// Splits "  12.5 GB/s " into 12.5 and "GB/s". Returns false with a message when the
// number is missing, malformed, negative or not finite.
bool split_number(std::string_view text, double& number, std::string_view& unit,
                  std::string& error) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec != std::errc() || ptr == begin) {
    error = "does not start with a number";
    return false;
  }
  if (!std::isfinite(number) || number < 0) {
    error = "must be a finite, non-negative number";
    return false;
  }
  unit = std::string_view(ptr, static_cast<size_t>(end - ptr));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return true;
}

// Parses `text` as number*unit into the base unit, or explains what was expected.
template <size_t N>
Parsed<double> parse_scaled(std::string_view text, const std::array<UnitFactor, N>& units,
                            std::string_view what, bool bare_number_ok) {
  Parsed<double> out;
  double number = 0;
  std::string_view unit;
  std::string why;
  if (!split_number(text, number, unit, why)) {
    out.error = "\"" + std::string(text) + "\" is not " + std::string(what) + ": " + why +
                " (expected a number and one of " + unit_list(units) + ")";
    return out;
  }
  if (unit.empty() && bare_number_ok) {
    out.value = number;
    return out;
  }
  for (const auto& u : units) {
    if (u.name == unit) {
      out.value = number * u.factor;
      return out;
    }
  }
  out.error = "\"" + std::string(text) + "\" is not " + std::string(what) + ": unknown unit \"" +
              std::string(unit) + "\" (expected one of " + unit_list(units) + ")";
  return out;
}

template <typename T, typename Make>
Parsed<T> convert(const Parsed<double>& p, Make make) {
  Parsed<T> out;
  if (p.value) out.value = make(*p.value);
  out.error = p.error;
  return out;
}

std::string format_scaled(double v, const char* const* names, const double* factors, int n) {
  int pick = 0;
  for (int i = 0; i < n; ++i) {
    if (v >= factors[i]) pick = i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g%s", v / factors[pick], names[pick]);
  return buf;
}

// The largest single duration, 10^6 s (11.6 days): the clock counts int64 nanoseconds
// (about 292 years), and a step adds up many durations (a latency per hop, per round, per
// repeated round), whose sums stay far inside it from here.
constexpr double kMaxDurationNs = 1e15;
// The largest bandwidth, 1 EB/s: about 5 x 10^5 times today's fastest link (NVLink 5,
// 1.8 TB/s per GPU). Rates far beyond it reach the max-min solver as infinity.
constexpr double kMaxBytesPerSecond = 1e18;
// The largest FLOP rate, 10^21 FLOP/s: about 10^5 times a B200's dense FP8 peak.
constexpr double kMaxFlopsPerSecond = 1e21;

}  // namespace

Parsed<Duration> parse_duration(std::string_view text) {
  auto p = parse_scaled(text, kDurationUnits, "a duration", false);
  if (p.value && *p.value > kMaxDurationNs) {
    return {std::nullopt, "\"" + std::string(text) +
                              "\" is not a duration dtsim simulates: at most 1e6 s (11.6 days)"};
  }
  return convert<Duration>(p, [](double ns) { return Duration::ns(std::llround(ns)); });
}

Parsed<Bytes> parse_bytes(std::string_view text) {
  auto p = parse_scaled(text, kByteUnits, "a size", false);
  if (p.value && *p.value > 9.2e18) {
    return {std::nullopt, "\"" + std::string(text) + "\" is not a size: too large"};
  }
  return convert<Bytes>(p, [](double b) { return Bytes(std::llround(b)); });
}

Parsed<Bandwidth> parse_bandwidth(std::string_view text) {
  auto p = parse_scaled(text, kBandwidthUnits, "a bandwidth", false);
  if (p.value && *p.value <= 0) {
    return {std::nullopt, "\"" + std::string(text) + "\" is not a bandwidth: must be positive"};
  }
  if (p.value && *p.value > kMaxBytesPerSecond) {
    return {std::nullopt, "\"" + std::string(text) +
                              "\" is not a bandwidth dtsim simulates: at most 1e18 B/s (8e18 bps)"};
  }
  return convert<Bandwidth>(p, [](double v) { return Bandwidth::bytes_per_s(v); });
}

Parsed<FlopRate> parse_flop_rate(std::string_view text) {
  auto p = parse_scaled(text, kFlopRateUnits, "a FLOP rate", false);
  if (p.value && *p.value <= 0) {
    return {std::nullopt, "\"" + std::string(text) + "\" is not a FLOP rate: must be positive"};
  }
  if (p.value && *p.value > kMaxFlopsPerSecond) {
    return {std::nullopt, "\"" + std::string(text) +
                              "\" is not a FLOP rate dtsim simulates: at most 1e21 FLOP/s"};
  }
  return convert<FlopRate>(p, [](double v) { return FlopRate::per_s(v); });
}

Parsed<Flops> parse_flops(std::string_view text) {
  return convert<Flops>(parse_scaled(text, kFlopUnits, "a FLOP count", true),
                        [](double v) { return Flops(v); });
}

std::string format_duration(Duration d) {
  static const char* const names[] = {"ns", "us", "ms", "s"};
  static const double factors[] = {1, 1e3, 1e6, 1e9};
  return format_scaled(static_cast<double>(d.count_ns()), names, factors, 4);
}

std::string format_bytes(Bytes b) {
  static const char* const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  static const double factors[] = {1, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0};
  return format_scaled(b.as_double(), names, factors, 5);
}

std::string format_bandwidth(Bandwidth bw) {
  static const char* const names[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  static const double factors[] = {1, 1e3, 1e6, 1e9, 1e12};
  return format_scaled(bw.bytes_per_second(), names, factors, 5);
}

std::string format_flop_rate(FlopRate r) {
  static const char* const names[] = {"FLOPS", "GFLOPS", "TFLOPS", "PFLOPS"};
  static const double factors[] = {1, 1e9, 1e12, 1e15};
  return format_scaled(r.flops_per_second(), names, factors, 4);
}

}  // namespace dtsim
