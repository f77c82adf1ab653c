// The catalog's calibrated figures still reproduce the runs they were derived from: each
// scenario of scenarios/calibration/ must predict its reference within the rounding of the
// figure it calibrates.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "reports/validation_report.h"

namespace dtsim {
namespace {

// The figures are kept to two digits (0.85, not 0.8507...), which moves a calibration run's
// step by up to ~1%; anything beyond 2% is a change to the model that the figure no longer
// matches.
constexpr double kCalibrationTolerance = 0.02;

std::vector<std::string> calibration_scenarios() {
  std::vector<std::string> paths;
  const std::filesystem::path dir = std::string(DTSIM_SOURCE_DIR) + "/scenarios/calibration";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  return paths;
}

TEST(Calibration, EveryRunReproducesItsReference) {
  const std::vector<std::string> paths = calibration_scenarios();
  ASSERT_FALSE(paths.empty()) << "scenarios/calibration/ holds no scenario";
  for (const std::string& path : paths) {
    const ValidationRow row = run_validation_case(path);
    EXPECT_LE(std::abs(row.error), kCalibrationTolerance)
        << row.name << ": predicted " << row.predicted << " against " << row.reference
        << ". The device figure calibrated on this run no longer reproduces it: re-derive it "
           "(docs/training.md, \"Calibrated figures\") or review the change to the model.";
  }
}

}  // namespace
}  // namespace dtsim
