// Strong unit types: integer-nanosecond time, bytes, FLOPs, bandwidth and FLOP rate.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace dtsim {

// Simulated time and durations, an integer count of nanoseconds. Integer time makes
// event order exact and results byte-identical across runs (ns-3 does the same).
class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration ns(int64_t n) { return Duration(n); }
  static constexpr Duration us(double v) { return from_seconds(v * 1e-6); }
  static constexpr Duration ms(double v) { return from_seconds(v * 1e-3); }
  // Rounds to the nearest nanosecond.
  static constexpr Duration from_seconds(double s) {
    return Duration(static_cast<int64_t>(s * 1e9 + (s >= 0 ? 0.5 : -0.5)));
  }
  static constexpr Duration infinite() { return Duration(std::numeric_limits<int64_t>::max()); }
  static constexpr Duration zero() { return Duration(0); }

  constexpr int64_t count_ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr bool is_infinite() const { return ns_ == std::numeric_limits<int64_t>::max(); }

  constexpr auto operator<=>(const Duration&) const = default;
  constexpr Duration operator+(Duration o) const { return Duration(ns_ + o.ns_); }
  constexpr Duration operator-(Duration o) const { return Duration(ns_ - o.ns_); }
  constexpr Duration& operator+=(Duration o) { ns_ += o.ns_; return *this; }
  constexpr Duration& operator-=(Duration o) { ns_ -= o.ns_; return *this; }
  constexpr Duration operator*(int64_t k) const { return Duration(ns_ * k); }

 private:
  constexpr explicit Duration(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

// A point in simulated time is the duration since the start of the simulation.
using Time = Duration;

// An amount of data. Integral: message and memory sizes are whole bytes.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(int64_t n) : n_(n) {}
  constexpr int64_t count() const { return n_; }
  constexpr double as_double() const { return static_cast<double>(n_); }
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return Bytes(n_ + o.n_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(n_ - o.n_); }
  constexpr Bytes& operator+=(Bytes o) { n_ += o.n_; return *this; }
  constexpr Bytes& operator-=(Bytes o) { n_ -= o.n_; return *this; }

 private:
  int64_t n_ = 0;
};

// A number of floating-point operations.
class Flops {
 public:
  constexpr Flops() = default;
  constexpr explicit Flops(double n) : n_(n) {}
  constexpr double count() const { return n_; }
  constexpr auto operator<=>(const Flops&) const = default;

 private:
  double n_ = 0;
};

// Data rate in bytes per second.
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth(v); }
  static constexpr Bandwidth gbps(double gigabits) { return Bandwidth(gigabits * 1e9 / 8); }
  static constexpr Bandwidth gb_per_s(double gigabytes) { return Bandwidth(gigabytes * 1e9); }
  constexpr double bytes_per_second() const { return v_; }
  constexpr double gbit_per_second() const { return v_ * 8 / 1e9; }
  constexpr auto operator<=>(const Bandwidth&) const = default;
  constexpr Bandwidth operator*(double k) const { return Bandwidth(v_ * k); }
  constexpr Bandwidth operator/(double k) const { return Bandwidth(v_ / k); }

 private:
  constexpr explicit Bandwidth(double v) : v_(v) {}
  double v_ = 0;
};

// Compute throughput in FLOP per second.
class FlopRate {
 public:
  constexpr FlopRate() = default;
  static constexpr FlopRate per_s(double v) { return FlopRate(v); }
  static constexpr FlopRate tflops(double t) { return FlopRate(t * 1e12); }
  constexpr double flops_per_second() const { return v_; }
  constexpr auto operator<=>(const FlopRate&) const = default;

 private:
  constexpr explicit FlopRate(double v) : v_(v) {}
  double v_ = 0;
};

// Whole nanoseconds, rounded up; infinite beyond what the type holds (~292 years).
inline Duration ceil_ns(double ns) {
  return ns < 9.2e18 ? Duration::ns(static_cast<int64_t>(std::ceil(ns))) : Duration::infinite();
}

// Time to move `b` at rate `bw`, rounded up to whole nanoseconds so that a transfer
// never finishes before its last byte could have arrived.
inline Duration operator/(Bytes b, Bandwidth bw) {
  return ceil_ns(b.as_double() / bw.bytes_per_second() * 1e9);
}

// Time to execute `f` at rate `r`, rounded up to whole nanoseconds.
inline Duration operator/(Flops f, FlopRate r) { return ceil_ns(f.count() / r.flops_per_second() * 1e9); }

inline constexpr Bytes KiB(int64_t n) { return Bytes(n << 10); }
inline constexpr Bytes MiB(int64_t n) { return Bytes(n << 20); }
inline constexpr Bytes GiB(int64_t n) { return Bytes(n << 30); }

}  // namespace dtsim
