// run_real_suite: calibrate, run, compare each case; then every case predicted from the
// other cases' in-step op times.
#include "runner/real_suite.h"

#include <algorithm>
#include <limits>
#include <memory>

#include <fmt/format.h>

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

}  // namespace

RealSuiteSummary run_real_suite(const RealSuiteOptions& o,
                                const std::function<void(const RealSuiteRow&)>& done) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(o.folder)) {
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  RealSuiteSummary summary;
  std::vector<Case> cases;
  for (const std::filesystem::path& file : files) {
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
    if (!c.row.why_not.empty()) {
      if (done) done(c.row);
      cases.push_back(std::move(c));
      continue;
    }
    c.options.link_emulator = o.link_emulator;
    const std::filesystem::path dir = o.out / c.row.name;
    std::filesystem::create_directories(dir);
    const std::filesystem::path costs = dir / "costs.json";
    // Calibration in isolation, just before the run, so that the machine's drift between
    // the two is as small as it can be. Every rank of the case runs on this machine, its
    // emulated nodes too, so each kernel is timed beside one co-runner per other rank (as
    // many as there are other cores: a case with more ranks than cores is refused by its run).
    const auto tc = std::chrono::steady_clock::now();
    const calibration::ChildResult cal = calibration::run_child(
        {o.dtsim.string(), "calibrate", "--backend", "cpu", "--for", file.string(),
         "--co-runners",
         std::to_string(std::clamp(ranks - 1, 0, std::max(calibration::usable_cores() - 1, 0))),
         "--collectives", "--out",
         costs.string(), "--quiet"},
        {}, dir / "calibrate.log", o.timeout, o.stop);
    c.row.calibrate_s = seconds_since(tc);
    if (cal.end == calibration::ChildResult::End::kStopped) return {};
    if (cal.end != calibration::ChildResult::End::kExited || cal.exit_code != 0) {
      c.row.why_not = calibration::describe_failure("dtsim calibrate", cal);
      if (done) done(c.row);
      cases.push_back(std::move(c));
      continue;
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
    if (c.run && c.run->cancelled) return {};
    if (c.run) {
      const RealValidation& v = *c.run;
      write_real_validation(dir, view_of(v, costs.string()));
      const executor::ErrorFigure& s = v.comparison.step;
      c.row.ran = true;
      c.row.ranks = static_cast<int>(v.measured.ranks.size());
      c.row.measured_s = s.measured_s;
      c.row.measured_p10_s = s.measured_p10_s;
      c.row.measured_p90_s = s.measured_p90_s;
      c.row.predicted_s = s.predicted_s;
      c.row.error = s.error;
      c.row.held_steps = v.feedback.held_steps;
      c.row.held_steps_error = v.feedback.held_error;
      c.row.held_steps_isolated_error = v.feedback.held_isolated_error;
      const RealValidationView view = view_of(v, costs.string());
      c.row.speed_ratio = machine_speed_ratio(view);
      c.row.error_at_run_speed = error_at_run_speed(view);
      if (summary.machine.empty()) {
        const calibration::DeviceIdentity cpu = calibration::cpu_identity("CPU");
        summary.machine = fmt::format("{} ({} cores, {}, {})", cpu.name, cpu.cores,
                                      v.measured.library, v.measured.blas);
      }
    }
    cases.push_back(std::move(c));
    if (done) done(cases.back().row);
  }
  // Every case predicted from the other cases' in-step op times, over its own isolated
  // database (for the ops no other case ran).
  for (Case& c : cases) {
    if (!c.run) continue;
    std::vector<calibration::CostEntry> others;
    for (const Case& d : cases) {
      if (&d == &c || !d.run) continue;
      for (calibration::CostEntry& e :
           in_step_entries(d.run->lowered.graph, d.run->measured, 0, d.run->comparison.steps)) {
        others.push_back(std::move(e));
      }
    }
    const calibration::CostDatabase base =
        read_cost_database_file(*c.options.costs.database);
    c.row.other_cases_predicted_s =
        predict_step(c.options, with_in_step(base, merge_in_step(std::move(others))));
    c.row.other_cases_error =
        executor::relative_error(c.row.other_cases_predicted_s, c.row.measured_s);
  }
  for (Case& c : cases) summary.rows.push_back(c.row);
  if (summary.machine.empty()) summary.machine = calibration::cpu_identity("CPU").name;
  summary.total_s = seconds_since(t0);
  return summary;
}

}  // namespace dtsim
