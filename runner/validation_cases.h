// Running the published cases (scenarios/validation/, scenarios/calibration/): each loaded,
// lowered with the cost model it asks for, run, and compared with its reference.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "reports/validation_report.h"

namespace dtsim {

// Loads and runs one scenario (no trace) and reads its reference comparison: one row for a
// training figure, one per size for a collective sweep (collective_time_us: the sweep of
// its one operation and algorithm, run at the reference's sizes). Throws ScenarioError for
// bad input and std::runtime_error when the scenario has no reference, its reference does
// not fit its workload, or the run did not complete.
// `resident_at_end`, when given, receives the process's resident bytes when the run has
// ended and its graph is still held (the case's peak, for memory admission).
std::vector<ValidationRow> run_validation_case(const std::string& path,
                                               uint64_t* resident_at_end = nullptr);

// The case has no "reference" block: nothing to compare (dtsim reproduce skips it).
struct NoReference : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace dtsim
