// The validation report: errors, median and worst, the JSON and Markdown writers, and the
// run of one reference scenario.
#include "reports/validation_report.h"
#include "runner/validation_cases.h"

#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scenarios/loader.h"

namespace dtsim {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

ValidationRow row(std::string name, double reference, double predicted) {
  ValidationRow r;
  r.name = std::move(name);
  r.scenario = r.name + ".json";
  r.source = "a paper";
  r.metric = "iteration_time_s";
  r.reference = reference;
  r.predicted = predicted;
  r.error = (predicted - reference) / reference;
  return r;
}

TEST(ValidationReport, MedianAndWorstUseAbsoluteErrors) {
  // Errors -20%, +5%, +10%: |e| sorted 5, 10, 20 -> median 10%, worst 20%.
  const std::vector<ValidationRow> rows = {row("a", 10, 8), row("b", 10, 10.5), row("c", 10, 11)};
  EXPECT_NEAR(median_abs_error(rows), 0.10, 1e-12);
  EXPECT_NEAR(worst_abs_error(rows), 0.20, 1e-12);
  // An even count averages the middle two: 5, 10, 20, 30 -> 15%.
  std::vector<ValidationRow> four = rows;
  four.push_back(row("d", 10, 13));
  EXPECT_NEAR(median_abs_error(four), 0.15, 1e-12);
  EXPECT_EQ(median_abs_error({}), 0);
}

TEST(ValidationReport, JsonHasTheRowsAndTheTarget) {
  const std::vector<ValidationRow> rows = {row("a", 10, 9.5), row("b", 4, 4.1)};
  const auto j = validation_json(rows);
  ASSERT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["cases"][0]["case"], "a");
  EXPECT_EQ(j["cases"][0]["metric"], "iteration_time_s");
  EXPECT_DOUBLE_EQ(j["cases"][0]["reference"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(j["cases"][0]["predicted"].get<double>(), 9.5);
  EXPECT_NEAR(j["cases"][0]["error"].get<double>(), -0.05, 1e-12);  // signed
  EXPECT_NEAR(j["stack_modelled"]["median_abs_error"].get<double>(), 0.0375, 1e-12);
  EXPECT_NEAR(j["stack_modelled"]["mean_error"].get<double>(), -0.0125, 1e-12);
  EXPECT_TRUE(j["within_target"].get<bool>());
  EXPECT_FALSE(validation_json({row("far", 10, 13)})["within_target"].get<bool>());
  EXPECT_FALSE(validation_json({})["within_target"].get<bool>());
}

TEST(ValidationReport, ASystematicBiasMissesTheTargetEvenWhenEveryCaseIsClose) {
  // -4% each: median and worst within 5% and 12%, but the mean is beyond 3%.
  const std::vector<ValidationRow> rows = {row("a", 10, 9.6), row("b", 10, 9.6), row("c", 10, 9.6)};
  EXPECT_NEAR(mean_error(rows), -0.04, 1e-12);
  EXPECT_FALSE(within_target(rows));
  EXPECT_TRUE(within_target({row("a", 10, 9.6), row("b", 10, 10.4), row("c", 10, 10)}));
}

TEST(ValidationReport, LegacyStacksAreShownApartFromTheTarget) {
  ValidationRow old = row("old", 10, 5);
  old.stack_modelled = false;
  old.stack_note = "a 2017 framework";
  const std::vector<ValidationRow> rows = {row("a", 10, 9.8), old};
  const auto j = validation_json(rows);
  EXPECT_TRUE(j["within_target"].get<bool>());  // the -50% case does not count
  EXPECT_EQ(j["stack_modelled"]["cases"], 1);
  EXPECT_EQ(j["legacy_stack"]["cases"], 1);
  EXPECT_NEAR(j["all"]["worst_abs_error"].get<double>(), 0.5, 1e-12);
  EXPECT_EQ(j["cases"][1]["stack_note"], "a 2017 framework");
  const std::string md = validation_markdown(rows, "cmd");
  EXPECT_THAT(md, HasSubstr("## Training cases on legacy stacks"));
  EXPECT_THAT(md, HasSubstr("| old | iteration_time_s | 10 | 5 | -50.0% | a 2017 framework |"));
  EXPECT_THAT(md, HasSubstr("Over all 2 training cases"));
}

TEST(ValidationReport, CollectiveRowsGetTheirOwnTableBySize) {
  ValidationRow a = row("sweep", 100, 90);
  a.bytes = 1048576;
  a.algorithm = "ring";
  ValidationRow b = row("sweep", 1000, 1100);
  b.bytes = 1073741824;
  b.algorithm = "nvls";
  const std::vector<ValidationRow> rows = {row("step", 10, 10), a, b};
  const auto j = validation_json(rows);
  ASSERT_EQ(j["cases"].size(), 1u);  // the training case only
  ASSERT_EQ(j["collectives"].size(), 1u);
  EXPECT_EQ(j["collectives"][0]["sizes"].size(), 2u);
  EXPECT_EQ(j["collectives"][0]["sizes"][1]["algorithm"], "nvls");
  EXPECT_NEAR(j["collectives"][0]["worst_abs_error"].get<double>(), 0.10, 1e-12);
  const std::string md = validation_markdown(rows, "cmd");
  EXPECT_THAT(md, HasSubstr("| 1 MiB | ring | 100 | 90 | -10.0% |"));
  EXPECT_THAT(md, HasSubstr("| 1 GiB | nvls | 1000 | 1100 | +10.0% |"));
}

TEST(ValidationReport, MarkdownListsEveryCaseAndTheVerdict) {
  const std::string md =
      validation_markdown({row("a", 10, 9.5), row("b", 4, 5.2)}, "dtsim reproduce x --md y");
  EXPECT_THAT(md, HasSubstr("dtsim reproduce x --md y"));
  EXPECT_THAT(md, HasSubstr("| a | iteration_time_s | 10 | 9.5 | -5.0% |"));
  EXPECT_THAT(md, HasSubstr("| b | iteration_time_s | 4 | 5.2 | +30.0% |"));
  EXPECT_THAT(md, HasSubstr("NOT within target"));
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// A small data-parallel step whose reference is what dtsim predicts for it, give or take:
// the run must produce a row with the sign of the error right.
constexpr const char* kScenario = R"({
  "cluster": { "nodes": [ { "count": 2, "device": "A100-80GB", "devices_per_node": 2,
                            "nics": 1, "nic_bandwidth": "100Gbps" } ],
               "fabric": { "kind": "single_switch" } },
  "model": { "family": "gpt", "layers": 2, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 64 },
  "training": { "global_batch": 8, "micro_batch": 2 },
  %REFERENCE%
  "simulation": { "trace": false }
})";

std::string scenario_with(const std::string& reference) {
  std::string s = kScenario;
  s.replace(s.find("%REFERENCE%"), 11, reference);
  return s;
}

TEST(ValidationReport, RunsAReferenceScenario) {
  const std::string path = write_temp(
      "validation_case.json",
      scenario_with(R"("reference": { "source": "test", "metric": "iteration_time_s", "value": 1000 },)"));
  const std::vector<ValidationRow> rows = run_validation_case(path);
  ASSERT_EQ(rows.size(), 1u);
  const ValidationRow& r = rows.front();
  EXPECT_EQ(r.name, "validation_case");
  EXPECT_EQ(r.metric, "iteration_time_s");
  EXPECT_GT(r.predicted, 0);
  EXPECT_LT(r.predicted, 1);  // a tiny model: far under the 1000 s reference
  EXPECT_NEAR(r.error, (r.predicted - 1000) / 1000, 1e-12);
  std::remove(path.c_str());
}

TEST(ValidationReport, NeedsAReferenceAndARunLength) {
  const std::string none = write_temp("no_reference.json", scenario_with(""));
  EXPECT_THAT([&] { run_validation_case(none); },
              ThrowsMessage<std::runtime_error>(HasSubstr("needs a \"reference\" block")));
  // time_to_train_s without the run's length in "training" cannot be predicted.
  const std::string ttt = write_temp(
      "no_length.json",
      scenario_with(R"("reference": { "source": "test", "metric": "time_to_train_s", "value": 60 },)"));
  EXPECT_THAT([&] { run_validation_case(ttt); },
              ThrowsMessage<std::runtime_error>(HasSubstr("time_to_train_s")));
  // A reference on a scenario that is not a training step has nothing to compare with.
  const std::string sweep = write_temp("sweep_reference.json", R"({
    "cluster": { "nodes": [ { "count": 1, "device": "H100", "devices_per_node": 2, "nics": 0 } ] },
    "workload": { "kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"] },
    "reference": { "source": "test", "metric": "iteration_time_s", "value": 1 } })");
  EXPECT_THAT([&] { run_validation_case(sweep); },
              ThrowsMessage<std::runtime_error>(HasSubstr("compares a training step")));
  std::remove(none.c_str());
  std::remove(ttt.c_str());
  std::remove(sweep.c_str());
}

constexpr const char* kSweep = R"({
  "name": "two_sizes",
  "cluster": { "nodes": [ { "count": 1, "device": "H100", "devices_per_node": 8, "nics": 0 } ] },
  "workload": { "kind": "collective", "ops": ["all_reduce"], "algorithms": [%ALGORITHMS%],
                "sizes": ["4KiB"] },
  "reference": { "source": "test", "metric": "collective_time_us",
                 "sizes": [ { "bytes": 1048576, "time_us": 40 }, { "bytes": "1GiB", "time_us": 4000 } ] } })";

std::string sweep_with(const std::string& algorithms) {
  std::string s = kSweep;
  s.replace(s.find("%ALGORITHMS%"), 12, algorithms);
  return s;
}

TEST(ValidationReport, RunsACollectiveCaseAtTheReferenceSizes) {
  // The sweep's own sizes give way to the reference's: one row per size.
  const std::string path = write_temp("sweep_case.json", sweep_with(R"("ring")"));
  const std::vector<ValidationRow> rows = run_validation_case(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].bytes, 1048576);
  EXPECT_EQ(rows[1].bytes, int64_t{1} << 30);
  EXPECT_EQ(rows[0].algorithm, "ring");
  // A ring all-reduce of 1 GiB on 8 H100s at 360 GB/s moves 2 x 7/8 GiB: about 5.2 ms.
  EXPECT_GT(rows[1].predicted, 5000);
  EXPECT_LT(rows[1].predicted, 5600);
  EXPECT_NEAR(rows[1].error, (rows[1].predicted - 4000) / 4000, 1e-12);
  std::remove(path.c_str());
}

TEST(ValidationReport, ACollectiveCaseComparesOneOperationAndAlgorithm) {
  const std::string path = write_temp("two_algorithms.json", sweep_with(R"("ring", "tree")"));
  EXPECT_THAT([&] { run_validation_case(path); },
              ThrowsMessage<std::runtime_error>(HasSubstr("one operation and one algorithm")));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dtsim
