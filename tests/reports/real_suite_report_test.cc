// The real-run suite's report: median and worst over the cases that ran, the target's
// verdict, and a case that did not run listed with its reason.
#include "reports/real_suite_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "reports/real_validation_report.h"

namespace dtsim {
namespace {

RealSuiteRow row(const std::string& name, double error) {
  RealSuiteRow r;
  r.name = name;
  r.ran = true;
  r.ranks = 2;
  r.measured_s = 1;
  r.predicted_s = 1 + error;
  r.error = error;
  return r;
}

TEST(RealSuiteReport, MedianAndWorstOverTheCasesThatRan) {
  RealSuiteSummary s;
  s.machine = "a test CPU";
  s.command = "dtsim validate scenarios/validation/real --doc docs/validation-real.md";
  s.rows = {row("a", -0.02), row("b", 0.04), row("c", -0.12)};
  RealSuiteRow skipped;
  skipped.name = "geo";
  skipped.why_not = "needs --emulate-links";
  s.rows.push_back(skipped);
  EXPECT_DOUBLE_EQ(real_median_abs_error(s.rows), 0.04);
  EXPECT_DOUBLE_EQ(real_worst_abs_error(s.rows), 0.12);
  std::string md = real_suite_markdown(s);
  EXPECT_NE(md.find(s.command), std::string::npos);
  EXPECT_NE(md.find("| geo | 0 | not run: needs --emulate-links"), std::string::npos) << md;
  // A case that did not run fails the target whatever the others' errors.
  EXPECT_NE(md.find("Median |error| 4.0% (target at most 5%: not met)"), std::string::npos) << md;
  const auto j = real_suite_json(s);
  EXPECT_EQ(j["cases"].size(), 4u);
  EXPECT_EQ(j["cases"][3]["ran"], false);
  s.rows.pop_back();
  md = real_suite_markdown(s);
  EXPECT_NE(md.find("Median |error| 4.0% (target at most 5%: met)"), std::string::npos) << md;
  EXPECT_NE(md.find("worst 12.0% (target at most 15%: met)"), std::string::npos) << md;
  s.rows[2].error = -0.2;
  EXPECT_NE(real_suite_markdown(s).find("worst 20.0% (target at most 15%: not met)"),
            std::string::npos);
}

TEST(RealSuiteReport, NoCaseOrAMissingCaseIsNeverMet) {
  RealSuiteSummary none;
  none.rows = {RealSuiteRow{}};
  EXPECT_NE(real_suite_markdown(none).find("No case ran"), std::string::npos);
  RealSuiteSummary some;
  some.rows = {row("a", 0.01), RealSuiteRow{}};
  const std::string md = real_suite_markdown(some);
  EXPECT_NE(md.find("Not every case ran"), std::string::npos) << md;
  EXPECT_NE(md.find("target at most 5%: not met"), std::string::npos) << md;
  // Too few steps to hold any out: the feedback columns say so.
  EXPECT_NE(md.find("| a | 2 | 1000.0 ms (0.0–0.0) | 1010.0 ms | +1.0% | n/a | n/a (n/a) |"),
            std::string::npos)
      << md;
}

TEST(RealSuiteReport, TheMachinesDriftIsShownBesideTheErrorNotInItsPlace) {
  RealSuiteSummary s;
  s.rows = {row("a", -0.10), row("b", 0.04)};
  s.rows[0].speed_ratio = 1.08;  // the machine ran 8% slower around the run
  s.rows[0].error_at_run_speed = -0.028;
  const std::string md = real_suite_markdown(s);
  EXPECT_NE(md.find("| -10.0% | +8.0% (-2.8%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| +4.0% | n/a |"), std::string::npos) << md;
  // The target's figure is still the error itself.
  EXPECT_NE(md.find("Median |error| 7.0%"), std::string::npos) << md;
  EXPECT_NE(md.find("At the run's speed (the drift taken out; not the target's figure): "
                    "median |error| 2.8%, worst 2.8% over 1 case."),
            std::string::npos)
      << md;
  const auto j = real_suite_json(s);
  EXPECT_DOUBLE_EQ(j["cases"][0]["error_at_run_speed"].get<double>(), -0.028);
  EXPECT_TRUE(j["cases"][1]["error_at_run_speed"].is_null());
}

RealSuiteRow round_of(int round, double error) {
  RealSuiteRow r = row("tp", error);
  r.round = round;
  r.measured_s = 1 + round;  // tells the rounds apart
  return r;
}

TEST(RealSuiteReport, ACaseStandsOnItsMedianRoundWithEveryRoundsErrorBesideIt) {
  // Odd: the middle error, whatever the order the rounds ran in.
  RealSuiteRow r = median_round({round_of(1, -0.09), round_of(2, 0.01), round_of(3, -0.04)});
  EXPECT_EQ(r.round, 3);
  EXPECT_DOUBLE_EQ(r.error, -0.04);
  EXPECT_DOUBLE_EQ(r.measured_s, 4);  // its figures are that round's, not a mix
  EXPECT_EQ(r.round_errors, (std::vector<double>{-0.09, 0.01, -0.04}));
  // Even: the lower of the middle two.
  r = median_round({round_of(1, 0.03), round_of(2, -0.02), round_of(3, 0.08), round_of(4, -0.1)});
  EXPECT_EQ(r.round, 2);
  EXPECT_DOUBLE_EQ(r.error, -0.02);
  // One round: that round.
  r = median_round({round_of(0, 0.05)});
  EXPECT_DOUBLE_EQ(r.error, 0.05);
  EXPECT_EQ(r.round_errors, std::vector<double>{0.05});
  // A round that did not run makes the case not run, saying which round.
  RealSuiteRow failed;
  failed.name = "tp";
  failed.round = 2;
  failed.why_not = "mpirun exited with status 1";
  r = median_round({round_of(1, 0.01), failed, round_of(3, 0.02)});
  EXPECT_FALSE(r.ran);
  EXPECT_EQ(r.why_not, "round 2: mpirun exited with status 1");
  EXPECT_THROW(median_round({}), std::invalid_argument);
}

TEST(RealSuiteReport, WithRoundsTheTableGivesEachCasesRoundsAndEachRoundByItself) {
  RealSuiteSummary s;
  s.rounds = 3;
  s.command = "dtsim validate scenarios/validation/real --rounds 3";
  s.rows = {median_round({round_of(1, -0.09), round_of(2, 0.01), round_of(3, -0.04)}),
            median_round({round_of(1, 0.02), round_of(2, -0.03), round_of(3, 0.06)})};
  s.rows[1].name = "dp";
  const std::string md = real_suite_markdown(s);
  EXPECT_NE(md.find("calibrated and run 3 times, in rounds"), std::string::npos) << md;
  EXPECT_NE(md.find("| -4.0% (round 3 of -9.0%, +1.0%, -4.0%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| +2.0% (round 1 of +2.0%, -3.0%, +6.0%) |"), std::string::npos) << md;
  // The headline stands on each case's median round: |-4%| and |+2%|.
  EXPECT_NE(md.find("Median |error| 3.0%"), std::string::npos) << md;
  // Round 1 alone: 9% and 2%; round 2: 1% and 3%; round 3: 4% and 6%.
  EXPECT_NE(md.find("Each round by itself: median |error| 5.5%, 2.0%, 5.0%; worst 9.0%, 3.0%, "
                    "6.0%."),
            std::string::npos)
      << md;
  const auto j = real_suite_json(s);
  EXPECT_EQ(j["rounds"], 3);
  EXPECT_EQ(j["cases"][0]["round"], 3);
  EXPECT_EQ(j["cases"][0]["round_errors"].size(), 3u);
  // One round: no round column, no per-round line.
  s.rounds = 1;
  s.rows = {row("a", 0.01)};
  const std::string single = real_suite_markdown(s);
  EXPECT_EQ(single.find("in rounds"), std::string::npos) << single;
  EXPECT_EQ(single.find("(round "), std::string::npos) << single;
  EXPECT_EQ(single.find("Each round by itself"), std::string::npos) << single;
  EXPECT_FALSE(real_suite_json(s)["cases"][0].contains("round_errors"));
}

TEST(RealValidationReport, TheDriftScalesThePredictionByTheReferencesRatio) {
  executor::StepComparison c;
  c.step.measured_s = 1.0;
  c.step.predicted_s = 0.9;
  RealValidationView v;
  v.comparison = &c;
  EXPECT_EQ(machine_speed_ratio(v), 0);  // no references taken
  EXPECT_TRUE(std::isnan(error_at_run_speed(v)));
  v.calibration_reference_s = 1.0e-3;
  v.run_reference_s = 1.1e-3;
  EXPECT_DOUBLE_EQ(machine_speed_ratio(v), 1.1);
  EXPECT_NEAR(error_at_run_speed(v), -0.01, 1e-12);  // 0.9 x 1.1 against 1.0
}

}  // namespace
}  // namespace dtsim
