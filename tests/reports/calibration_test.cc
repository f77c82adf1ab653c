// The catalog's calibrated figures still reproduce the runs they were derived from, and
// those runs stay apart from the validation cases: each scenario of scenarios/calibration/
// must predict its reference within the rounding of the figure it calibrates.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "reports/validation_report.h"
#include "runner/validation_cases.h"

namespace dtsim {
namespace {

// The figures are kept to two digits (0.85, not 0.8507...), which moves a calibration run's
// step by up to ~0.5%; anything beyond 2% is a change to the model that the figure no
// longer matches.
constexpr double kCalibrationTolerance = 0.02;

std::vector<std::string> scenarios_in(const std::string& folder) {
  std::vector<std::string> paths;
  const std::filesystem::path dir = std::string(DTSIM_SOURCE_DIR) + "/scenarios/" + folder;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  return paths;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(Calibration, EveryRunReproducesItsReference) {
  const std::vector<std::string> paths = scenarios_in("calibration");
  ASSERT_FALSE(paths.empty()) << "scenarios/calibration/ holds no scenario";
  for (const std::string& path : paths) {
    const std::vector<ValidationRow> rows = run_validation_case(path);
    ASSERT_EQ(rows.size(), 1u) << path;
    const ValidationRow& row = rows.front();
    EXPECT_LE(std::abs(row.error), kCalibrationTolerance)
        << row.name << ": predicted " << row.predicted << " against " << row.reference
        << ". The device figure calibrated on this run no longer reproduces it: re-derive it "
           "(docs/training.md, \"Calibrated figures\") or review the change to the model.";
  }
}

// A run that calibrates a figure must not also count as evidence for it.
TEST(Calibration, NoRunIsAlsoAValidationCase) {
  std::set<std::string> names;
  std::set<std::string> sources;
  for (const std::string& path : scenarios_in("validation")) {
    const nlohmann::json doc = read_json(path);
    names.insert(doc.value("name", ""));
    if (doc.contains("reference")) sources.insert(doc["reference"].value("source", ""));
  }
  for (const std::string& path : scenarios_in("calibration")) {
    const nlohmann::json doc = read_json(path);
    EXPECT_EQ(names.count(doc.value("name", "")), 0u) << path;
    ASSERT_TRUE(doc.contains("reference")) << path;
    EXPECT_EQ(sources.count(doc["reference"].value("source", "")), 0u) << path;
  }
}

}  // namespace
}  // namespace dtsim
