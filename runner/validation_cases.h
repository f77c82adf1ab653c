// Running the published cases (scenarios/validation/, scenarios/calibration/): each loaded,
// lowered with the cost model it asks for, run, and compared with its reference.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "reports/validation_report.h"

namespace dtsim {

// Loads and runs one scenario (no trace) and reads its reference comparison. Throws
// ScenarioError for bad input and std::runtime_error when the scenario has no reference
// or the run did not complete.
// `resident_at_end`, when given, receives the process's resident bytes when the run has
// ended and its graph is still held (the case's peak, for memory admission).
ValidationRow run_validation_case(const std::string& path, uint64_t* resident_at_end = nullptr);

// The case has no "reference" block: nothing to compare (dtsim reproduce skips it).
struct NoReference : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace dtsim
