// What a long command shows and how it stops: a progress bar on a terminal for runs longer
// than about a second, and Ctrl-C turned into a clean stop of the lowering or simulation
// in flight (the command then writes nothing).
#pragma once

#include <chrono>
#include <stop_token>
#include <string>

#include "sim/run_control.h"

namespace dtsim::cli {

inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

class RunSession {
 public:
  // Installs a SIGINT handler for the session's lifetime (unless SIGINT was ignored, as in
  // a background job): the first Ctrl-C asks the run to stop, a second one ends the process
  // as Ctrl-C normally does. `progress` draws the bar on stderr when it is a terminal.
  explicit RunSession(bool progress);
  ~RunSession();
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  const RunControl& control() const { return control_; }
  // Ctrl-C was pressed (also before any lowering or simulation polled for it).
  bool interrupted() const;
  // Erases the progress bar; call it before printing anything else.
  void finish();
  // Says that `what` was stopped and nothing was written; returns kExitInterrupted.
  int report_interrupted(std::string_view what);

 private:
  void draw(std::string_view phase, int64_t done, int64_t total);

  std::stop_source stop_;
  RunControl control_;
  bool show_ = false;
  bool handling_ = false;  // the handler is installed
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::string phase_;  // the phase drawn last, and when it began
  std::chrono::steady_clock::time_point phase_start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace dtsim::cli
