// Progress and cancellation for long library calls (lowering, simulation): the caller
// passes a stop token and a progress callback; the callee reports progress and checks the
// token at bounded intervals of its work (lowering: before each rank it emits, and every
// `check_every` tasks it prices; simulation: every `check_every` instants or 50 ms, see
// Engine::run), so a stop is honoured within a bounded amount of work and a cancelled
// call returns a result marked cancelled instead of throwing.
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string_view>

namespace dtsim {

struct RunControl {
  std::stop_token stop;
  // Called with the work done and the work in all; `phase` names the call ("lowering",
  // "simulation").
  std::function<void(std::string_view phase, int64_t done, int64_t total)> progress;
  int64_t check_every = 1 << 14;

  bool stop_requested() const { return stop.stop_requested(); }
  void report(std::string_view phase, int64_t done, int64_t total) const {
    if (progress) progress(phase, done, total);
  }
};

}  // namespace dtsim
