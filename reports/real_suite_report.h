// The validation suite against real runs (dtsim validate on a folder of scenarios): per
// case, the measured step with its spread, the prediction from a cost database calibrated
// just before in isolation, its error, and the feedback errors (held-out steps, held-out
// cases); the median and worst, written as docs/validation-real.md and suite.json.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim {

struct RealSuiteRow {
  std::string file;
  std::string name;
  int ranks = 0;
  bool ran = false;
  std::string why_not;  // when it did not run
  double measured_s = 0;
  double measured_p10_s = 0;
  double measured_p90_s = 0;
  double predicted_s = 0;
  double error = 0;
  // Feedback: the first half of the steps' op times predicting the second half's median,
  // and every other case's op times predicting this one.
  int held_steps = 0;  // 0: too few measured steps to hold any out
  double held_steps_error = 0;
  double held_steps_isolated_error = 0;
  double other_cases_predicted_s = 0;
  double other_cases_error = 0;
  // The machine's speed around the run over its speed during the calibration (0 when not
  // taken), and the error had the prediction been priced at the run's speed.
  double speed_ratio = 0;
  double error_at_run_speed = 0;
  double calibrate_s = 0;  // its calibration's wall time
  double run_s = 0;        // its real run's wall time (mpirun to the last rank's exit)
  // With several rounds (`dtsim validate FOLDER --rounds N`): the round these figures come
  // from (1-based; 0 with one round) and every round's error, in round order.
  int round = 0;
  std::vector<double> round_errors;
};

// A case's rounds (each a calibrate-and-run pair, the pairs of every case alternated)
// folded into its row: the round whose error is the median (of an even count, the lower
// of the middle two), with every round's error beside it, so that a spell of this VM
// running slow in one pair neither makes nor breaks the case. A round that did not run
// makes the case not run, with that round's reason.
RealSuiteRow median_round(const std::vector<RealSuiteRow>& rounds);

// dtsim's accuracy target against real runs (the real-execution issue): median |error| at
// most 5%, none worse than 15%.
inline constexpr double kRealTargetMedianError = 0.05;
inline constexpr double kRealTargetWorstError = 0.15;

struct RealSuiteSummary {
  std::string machine;  // the CPU, its cores, the MPI library and the BLAS
  std::string command;  // how the suite was run, quoted so anyone can rerun it
  double total_s = 0;
  int rounds = 1;  // calibrate-and-run pairs per case
  std::vector<RealSuiteRow> rows;
};

// Over the rows that ran.
double real_median_abs_error(const std::vector<RealSuiteRow>& rows);
double real_worst_abs_error(const std::vector<RealSuiteRow>& rows);

nlohmann::ordered_json real_suite_json(const RealSuiteSummary& s);
std::string real_suite_markdown(const RealSuiteSummary& s);

}  // namespace dtsim
