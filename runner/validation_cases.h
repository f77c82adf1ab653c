// Running the published cases (scenarios/validation/, scenarios/calibration/): each loaded,
// lowered with the cost model it asks for, run, and compared with its reference.
#pragma once

#include <string>

#include "reports/validation_report.h"

namespace dtsim {

// Loads and runs one scenario (no trace) and reads its reference comparison. Throws
// ScenarioError for bad input and std::runtime_error when the scenario has no reference
// or the run did not complete.
ValidationRow run_validation_case(const std::string& path);

}  // namespace dtsim
