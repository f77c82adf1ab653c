// The progress bar and the SIGINT handler behind RunSession.
#include "cli/run_session.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <fmt/format.h>

namespace dtsim::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

// The first Ctrl-C asks for a stop; a second one, for a run that has not reached its next
// check (or will not), ends the process the default way.
extern "C" void on_interrupt(int signal) {
  if (g_interrupted != 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  g_interrupted = 1;
}

using Clock = std::chrono::steady_clock;

}  // namespace

RunSession::RunSession(bool progress)
    : show_(progress && ::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {
  g_interrupted = 0;
  // A process started with SIGINT ignored keeps ignoring it.
  handling_ = std::signal(SIGINT, on_interrupt) != SIG_IGN;
  if (!handling_) std::signal(SIGINT, SIG_IGN);
  control_.stop = stop_.get_token();
  control_.progress = [this](std::string_view phase, int64_t done, int64_t total) {
    // The handler only sets a flag (request_stop is not async-signal-safe); the stop is
    // requested here, at the next check of the run in flight.
    if (g_interrupted != 0) stop_.request_stop();
    draw(phase, done, total);
  };
}

RunSession::~RunSession() {
  if (handling_) std::signal(SIGINT, SIG_DFL);
  finish();
}

void RunSession::finish() {
  if (drawn_) std::fputs("\r\033[K", stderr);
  drawn_ = false;
  show_ = false;
}

bool RunSession::interrupted() const { return g_interrupted != 0; }

int RunSession::report_interrupted(std::string_view what) {
  finish();
  fmt::print(stderr, "interrupted: the {} was stopped; nothing was written\n", what);
  return kExitInterrupted;
}

void RunSession::draw(std::string_view phase, int64_t done, int64_t total) {
  const auto now = Clock::now();
  if (phase != phase_) {
    phase_ = std::string(phase);
    phase_start_ = now;
  }
  // Short runs show nothing; longer ones redraw about ten times a second.
  if (!show_ || now - start_ < std::chrono::seconds(1) ||
      (drawn_ && now - last_draw_ < std::chrono::milliseconds(100))) {
    return;
  }
  constexpr int kWidth = 30;
  const double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0;
  const int filled = static_cast<int>(fraction * kWidth);
  const std::string bar = std::string(static_cast<size_t>(filled), '#') +
                          std::string(static_cast<size_t>(kWidth - filled), '.');
  // The time left at this phase's rate so far, once it has one.
  const double in_phase = std::chrono::duration<double>(now - phase_start_).count();
  const std::string left =
      fraction > 0.02 && in_phase > 0.5
          ? fmt::format(", ~{:.0f} s left", in_phase * (1 - fraction) / fraction)
          : "";
  fmt::print(stderr, "\r\033[K{:<11} [{}] {:5.1f}%  {:.0f} s{} (Ctrl-C stops)", phase, bar,
             100 * fraction, std::chrono::duration<double>(now - start_).count(), left);
  std::fflush(stderr);
  drawn_ = true;
  last_draw_ = now;
}

}  // namespace dtsim::cli
