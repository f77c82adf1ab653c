// run_real_suite: calibrate, run, compare each case; then every case predicted from the
// other cases' in-step op times.
#include "runner/real_suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "calibration/calibrate.h"
#include "calibration/child_process.h"
#include "calibration/cost_database.h"
#include "executor/step_comparison.h"
#include "reports/real_validation_report.h"
#include "runner/cost_database_file.h"
#include "runner/emulated_network.h"
#include "runner/in_step_costs.h"
#include "scenarios/loader.h"

namespace dtsim {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Case {
  RealSuiteRow row;
  RealRunOptions options;
  std::unique_ptr<RealValidation> run;
};

// One calibrate-and-run pair of the case in `file`, its files in `dir`. Returns nullopt
// when the suite was stopped.
std::optional<Case> run_pair(const std::filesystem::path& file, const std::filesystem::path& dir,
                             const RealSuiteOptions& o, RealSuiteSummary& summary) {
  Case c;
  c.row.file = file.string();
  c.row.name = file.stem().string();
  // Ranks on several nodes talk over the network: that case needs emulated links.
  int ranks = 1;
  try {
    const Scenario scenario = load_scenario_file(file.string());
    c.options.emulate_links = scenario.cluster.nodes.size() > 1;
    ranks = scenario.cluster.num_ranks();
  } catch (const std::exception& e) {
    c.row.why_not = e.what();
  }
  if (c.options.emulate_links) {
    if (const std::string why = emulation_unavailable_reason(); !why.empty()) {
      c.row.why_not = "its ranks are on two nodes, and " + why;
    }
  }
  if (!c.row.why_not.empty()) return c;
  c.options.link_emulator = o.link_emulator;
  std::filesystem::create_directories(dir);
  const std::filesystem::path costs = dir / "costs.json";
  // Calibration in isolation, just before the run, so that the machine's drift between
  // the two is as small as it can be. Every rank of the case runs on this machine, its
  // emulated nodes too, so each kernel is timed beside one co-runner per other rank (as
  // many as there are other cores: a case with more ranks than cores is refused by its run).
  const auto tc = std::chrono::steady_clock::now();
  const calibration::ChildResult cal = calibration::run_child(
      {o.dtsim.string(), "calibrate", "--backend", "cpu", "--for", file.string(), "--co-runners",
       std::to_string(std::clamp(ranks - 1, 0, std::max(calibration::usable_cores() - 1, 0))),
       "--collectives", "--out", costs.string(), "--quiet"},
      {}, dir / "calibrate.log", o.timeout, o.stop);
  c.row.calibrate_s = seconds_since(tc);
  if (cal.end == calibration::ChildResult::End::kStopped) return std::nullopt;
  if (cal.end != calibration::ChildResult::End::kExited || cal.exit_code != 0) {
    c.row.why_not = calibration::describe_failure("dtsim calibrate", cal);
    return c;
  }
  c.options.scenario = file.string();
  c.options.costs.database = costs.string();
  c.options.rank_program = o.rank_program;
  c.options.warmup = o.warmup;
  c.options.iterations = o.iterations;
  c.options.timeout = o.timeout;
  c.options.stop = o.stop;
  c.options.folder = dir / "ranks";
  const auto tr = std::chrono::steady_clock::now();
  try {
    c.run = std::make_unique<RealValidation>(validate_for_real(c.options));
  } catch (const std::exception& e) {
    c.row.why_not = e.what();
  }
  c.row.run_s = seconds_since(tr);
  if (c.run && c.run->cancelled) return std::nullopt;
  if (!c.run) return c;
  const RealValidation& v = *c.run;
  const RealValidationView view = view_of(v, costs.string());
  write_real_validation(dir, view);
  const executor::ErrorFigure& step = v.comparison.step;
  c.row.ran = true;
  c.row.ranks = static_cast<int>(v.measured.ranks.size());
  c.row.measured_s = step.measured_s;
  c.row.measured_p10_s = step.measured_p10_s;
  c.row.measured_p90_s = step.measured_p90_s;
  c.row.predicted_s = step.predicted_s;
  c.row.error = step.error;
  c.row.held_steps = v.feedback.held_steps;
  c.row.held_steps_error = v.feedback.held_error;
  c.row.held_steps_isolated_error = v.feedback.held_isolated_error;
  c.row.speed_ratio = machine_speed_ratio(view);
  c.row.error_at_run_speed = error_at_run_speed(view);
  if (summary.machine.empty()) {
    const calibration::DeviceIdentity cpu = calibration::cpu_identity("CPU");
    summary.machine = fmt::format("{} ({} cores, {}, {})", cpu.name, cpu.cores, v.measured.library,
                                  v.measured.blas);
  }
  return c;
}

}  // namespace

RealSuiteSummary run_real_suite(const RealSuiteOptions& o,
                                const std::function<void(const RealSuiteRow&)>& done) {
  if (o.rounds < 1) throw std::invalid_argument("the suite runs at least one round");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(o.folder)) {
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  RealSuiteSummary summary;
  summary.rounds = o.rounds;
  // Round after round, every case once per round: a case's pairs are minutes apart, so a
  // spell of the machine running slow falls on one of them, not on all.
  std::vector<std::vector<Case>> pairs(files.size());
  for (int round = 1; round <= o.rounds; ++round) {
    for (size_t i = 0; i < files.size(); ++i) {
      if (!pairs[i].empty() && !pairs[i].back().row.ran) continue;  // it failed: once is enough
      const std::filesystem::path case_dir = o.out / files[i].stem();
      std::optional<Case> c =
          run_pair(files[i], o.rounds == 1 ? case_dir : case_dir / fmt::format("round-{}", round),
                   o, summary);
      if (!c) return {};
      c->row.round = o.rounds == 1 ? 0 : round;
      if (done) done(c->row);
      pairs[i].push_back(std::move(*c));
    }
  }
  // Each case stands on its median round: its row and its run (for the feedback below).
  std::vector<Case> cases;
  for (std::vector<Case>& rounds : pairs) {
    std::vector<RealSuiteRow> rows;
    for (const Case& c : rounds) rows.push_back(c.row);
    Case chosen;
    chosen.row = median_round(rows);
    for (Case& c : rounds) {
      if (c.row.round == chosen.row.round && c.row.ran == chosen.row.ran) {
        chosen.options = std::move(c.options);
        chosen.run = std::move(c.run);
        break;
      }
    }
    cases.push_back(std::move(chosen));
  }
  // Every case predicted from the other cases' in-step op and call times, over its own
  // isolated database (for the ops and calls no other case ran).
  for (Case& c : cases) {
    if (!c.run) continue;
    const calibration::CostDatabase base = read_cost_database_file(*c.options.costs.database);
    std::vector<calibration::CostEntry> others;
    std::vector<calibration::CollectiveMeasurement> other_calls;
    for (const Case& d : cases) {
      if (&d == &c || !d.run) continue;
      const RealValidation& v = *d.run;
      for (calibration::CostEntry& e :
           in_step_entries(v.lowered.graph, v.measured, 0, v.comparison.steps)) {
        others.push_back(std::move(e));
      }
      for (calibration::CollectiveMeasurement& m :
           in_step_collectives(v.lowered.graph, v.scenario->cluster, v.measured, 0,
                               v.comparison.steps, intra_node_ranks(base))) {
        other_calls.push_back(std::move(m));
      }
    }
    c.row.other_cases_predicted_s =
        predict_step(c.options, with_in_step(base, merge_in_step(std::move(others)),
                                             merge_in_step_collectives(std::move(other_calls))));
    c.row.other_cases_error =
        executor::relative_error(c.row.other_cases_predicted_s, c.row.measured_s);
  }
  for (Case& c : cases) summary.rows.push_back(c.row);
  if (summary.machine.empty()) summary.machine = calibration::cpu_identity("CPU").name;
  summary.total_s = seconds_since(t0);
  return summary;
}

}  // namespace dtsim
