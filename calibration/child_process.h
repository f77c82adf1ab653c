// Running another program (mpirun and its ranks) to completion under a deadline and a stop
// token: in its own process group, so that a time-out or a stop ends all of it and leaves no
// orphaned process behind.
#pragma once

#include <chrono>
#include <filesystem>
#include <stop_token>
#include <string>
#include <vector>

namespace dtsim::calibration {

struct ChildResult {
  enum class End { kExited, kSignalled, kTimedOut, kStopped };
  End end = End::kExited;
  int exit_code = 0;   // kExited: its status; kSignalled: the signal
  std::string output;  // its standard output and error, the last 8 KiB
};

// Runs argv[0] (looked up in PATH) with `argv` and the extra environment `env` ("KEY=value"),
// its output to `log`. On the deadline or a stop it sends SIGTERM to the whole group, then
// SIGKILL two seconds later, and waits for it. Throws std::runtime_error when it cannot start.
ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const std::filesystem::path& log, std::chrono::milliseconds deadline,
                      std::stop_token stop);

// One sentence for a run that did not exit 0: how it ended and its output's tail.
std::string describe_failure(const std::string& what, const ChildResult& r);

}  // namespace dtsim::calibration
