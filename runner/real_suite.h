// The validation suite against real runs: every scenario of a folder calibrated on this
// machine in isolation (a `dtsim calibrate` process, no rank running), then run for real
// and compared, in one or several rounds, then the feedback cross-checked across cases.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>

#include "reports/real_suite_report.h"
#include "runner/real_validation.h"

namespace dtsim {

struct RealSuiteOptions {
  std::filesystem::path folder;        // the cases (*.json, in name order)
  std::filesystem::path dtsim;         // the dtsim executable that calibrates
  std::filesystem::path rank_program;  // dtsim-rank
  // dtsim-link-emulator: a case whose ranks sit on several nodes runs over emulated links
  // (emulated_network.h); without root it is listed as not run, with the reason.
  std::filesystem::path link_emulator;
  int warmup = 2;
  int iterations = 5;
  // Calibrate-and-run pairs per case, in rounds (every case once per round); each case's
  // row is its median round (median_round). With more than one, a case's files go to
  // OUT/CASE/round-K.
  int rounds = 1;
  std::chrono::milliseconds timeout = std::chrono::minutes(5);  // per calibration and run
  std::stop_token stop;
  std::filesystem::path out;  // a folder per case: costs.json, validation.*, ranks/
};

// Runs every case; `done` sees each pair's figures as it finishes (the CLI prints them;
// RealSuiteRow::round says which round). A case that fails to run is a row with its
// reason, and is not run again in later rounds; the suite goes on. Returns the rows, one
// per case (empty, with nothing written, when stopped).
RealSuiteSummary run_real_suite(const RealSuiteOptions& o,
                                const std::function<void(const RealSuiteRow&)>& done = {});

}  // namespace dtsim
