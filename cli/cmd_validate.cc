// `dtsim validate`: run a scenario's step for real on this machine's CPU ranks and compare
// it with the simulator's prediction from the same cost database, task by task.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/run_session.h"
#include "reports/real_validation_report.h"
#include "reports/atomic_file.h"
#include "reports/real_suite_report.h"
#include "runner/real_suite.h"
#include "runner/real_validation.h"
#include "sim/input_error.h"
#include "sim/unit_parse.h"

namespace dtsim::cli {
namespace {

struct ValidateArgs {
  std::string scenario;
  std::string backend = "cpu";
  std::optional<int> ranks;
  std::optional<std::string> costs;
  std::optional<std::string> costs_device;
  std::vector<std::string> sets;
  int iterations = 5;
  int warmup = 2;
  std::string timeout = "10min";
  bool emulate_links = false;
  std::string out;
  std::optional<std::string> update_costs;
  std::optional<std::string> doc;
  std::optional<int> rounds;
  bool quiet = false;
};

// RunSession notices Ctrl-C, but only a progress callback turns it into a stop, and a real
// run has none while mpirun runs: this watcher does, so that the ranks, the emulated
// network and the outputs are ended cleanly.
class InterruptWatcher {
 public:
  explicit InterruptWatcher(const RunSession& session)
      : thread_([this, &session](std::stop_token done) {
          while (!done.stop_requested()) {
            if (session.interrupted()) {
              stop_.request_stop();
              return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        }) {}
  std::stop_token token() const { return stop_.get_token(); }

 private:
  std::stop_source stop_;
  std::jthread thread_;
};

// A folder of cases: each calibrated, run and compared; the table to OUT/validation-real.md
// (or --doc) and OUT/suite.json.
int validate_suite(const ValidateArgs& args, std::chrono::milliseconds timeout) {
  RunSession session(false);
  const InterruptWatcher watcher(session);
  RealSuiteOptions o;
  o.folder = args.scenario;
  o.dtsim = beside_dtsim("dtsim");
  o.rank_program = beside_dtsim("dtsim-rank");
  o.link_emulator = beside_dtsim("dtsim-link-emulator");
  o.warmup = args.warmup;
  o.iterations = args.iterations;
  o.rounds = args.rounds.value_or(1);
  o.timeout = timeout;
  o.stop = watcher.token();
  o.out = args.out.empty() ? std::filesystem::path("dtsim-out") / "validation-real"
                           : std::filesystem::path(args.out);
  const RealSuiteSummary summary = run_real_suite(o, [&](const RealSuiteRow& r) {
    if (args.quiet) return;
    const std::string round =
        r.round > 0 ? fmt::format("round {} of {}: ", r.round, o.rounds) : std::string();
    if (!r.ran) {
      std::cout << fmt::format("{}{}: not run: {}\n", round, r.name, r.why_not);
    } else {
      std::cout << fmt::format(
          "{}{}: measured {:.1f} ms (p10 {:.1f}, p90 {:.1f}), predicted {:.1f} ms: {:+.1f}% "
          "(calibration {:.0f} s, run {:.0f} s)\n",
          round, r.name, r.measured_s * 1e3, r.measured_p10_s * 1e3, r.measured_p90_s * 1e3,
          r.predicted_s * 1e3, 100 * r.error, r.calibrate_s, r.run_s);
    }
    std::cout << std::flush;
  });
  if (summary.rows.empty() || session.interrupted()) return session.report_interrupted("the suite");
  RealSuiteSummary s = summary;
  s.command = "dtsim validate " + args.scenario +
              (args.doc ? " --doc " + *args.doc : std::string()) +
              (args.iterations != 5 ? " --iterations " + std::to_string(args.iterations) : "") +
              (args.warmup != 2 ? " --warmup " + std::to_string(args.warmup) : "") +
              (o.rounds != 1 ? " --rounds " + std::to_string(o.rounds) : "");
  const std::filesystem::path doc =
      args.doc ? std::filesystem::path(*args.doc) : o.out / "validation-real.md";
  write_file_atomically(o.out / "suite.json", real_suite_json(s).dump(1) + "\n");
  write_file_atomically(doc, real_suite_markdown(s));
  if (!args.quiet) {
    std::cout << fmt::format(
        "median |error| {:.1f}%, worst {:.1f}% over {} cases in {:.0f} s; wrote {} and {}\n",
        100 * real_median_abs_error(s.rows), 100 * real_worst_abs_error(s.rows), s.rows.size(),
        s.total_s, doc.string(), (o.out / "suite.json").string());
  }
  for (const RealSuiteRow& r : s.rows) {
    if (!r.ran) return kExitFailure;
  }
  return kExitOk;
}

int validate(const ValidateArgs& args) {
  if (args.backend == "cuda") {
    throw InputError("--backend cuda",
                     {{"",
                       "the GPU executor (CUDA streams and NCCL ranks) is not built yet; "
                       "validate on the CPU backend (--backend cpu)"}});
  }
  const auto timeout = parse_duration(args.timeout);
  if (!timeout.value || *timeout.value <= Duration::zero()) {
    throw InputError("--timeout", {{"", "expected a positive duration such as \"10min\", got \"" +
                                            args.timeout + "\""}});
  }
  const auto limit =
      std::chrono::milliseconds(static_cast<int64_t>(timeout.value->seconds() * 1e3));
  if (std::filesystem::is_directory(args.scenario)) {
    // The suite calibrates each case itself and emulates the links of multi-node cases.
    for (const auto& [given, name] :
         {std::pair{!args.sets.empty(), "--set"}, std::pair{args.costs.has_value(), "--costs"},
          std::pair{args.costs_device.has_value(), "--costs-device"},
          std::pair{args.update_costs.has_value(), "--update-costs"},
          std::pair{args.emulate_links, "--emulate-links"},
          std::pair{args.ranks.has_value(), "--ranks"}}) {
      if (given) {
        throw InputError(name, {{"",
                                 "applies to one scenario; the suite calibrates each case "
                                 "itself and emulates the links of multi-node cases"}});
      }
    }
    if (args.rounds && *args.rounds < 1) {
      throw InputError("--rounds", {{"", "expected a whole number of at least 1, got " +
                                             std::to_string(*args.rounds)}});
    }
    return validate_suite(args, limit);
  }
  if (args.doc) {
    throw InputError("--doc", {{"", "the suite's table: name a folder of cases, not a scenario"}});
  }
  if (args.rounds) {
    throw InputError("--rounds", {{"",
                                   "the suite's calibrate-and-run pairs per case: name a "
                                   "folder of cases, not a scenario (run this one again "
                                   "to repeat it)"}});
  }
  RunSession session(false);
  const InterruptWatcher watcher(session);
  RealRunOptions o;
  o.scenario = args.scenario;
  o.overrides = args.sets;
  o.costs = CostsChoice{args.costs, args.costs_device};
  o.rank_program = beside_dtsim("dtsim-rank");
  o.warmup = args.warmup;
  o.iterations = args.iterations;
  o.timeout = limit;
  o.stop = watcher.token();
  // The name is known once loaded; the folder is chosen before, from the file's stem.
  const std::filesystem::path out =
      args.out.empty()
          ? std::filesystem::path("dtsim-out") /
                (folder_name(std::filesystem::path(args.scenario).stem().string()) + "-validation")
          : std::filesystem::path(args.out);
  o.folder = out / "ranks";
  if (args.update_costs) o.update_costs = *args.update_costs;
  o.emulate_links = args.emulate_links;
  o.link_emulator = beside_dtsim("dtsim-link-emulator");
  if (!args.quiet) {
    std::cout << fmt::format("running {} for real: {} warm-up and {} measured steps...\n",
                             args.scenario, args.warmup, args.iterations)
              << std::flush;
  }
  const RealValidation v = validate_for_real(o);
  if (v.cancelled || session.interrupted()) return session.report_interrupted("validation");
  if (args.ranks && *args.ranks != static_cast<int>(v.measured.ranks.size())) {
    throw InputError("--ranks", {{"", fmt::format("the scenario's step runs on {} ranks, not {}: "
                                                  "change its cluster to change them",
                                                  v.measured.ranks.size(), *args.ranks)}});
  }
  write_real_validation(out, view_of(v, args.costs.value_or("")));
  if (!args.quiet) {
    const executor::ErrorFigure& s = v.comparison.step;
    std::cout << fmt::format(
        "step: measured {:.2f} ms (p10 {:.2f}, p90 {:.2f}) over {} steps on {} ranks; predicted "
        "{:.2f} ms ({} cost model): error {:+.1f}%\n",
        s.measured_s * 1e3, s.measured_p10_s * 1e3, s.measured_p90_s * 1e3, v.comparison.steps,
        v.measured.ranks.size(), s.predicted_s * 1e3, v.lowered.cost_model, 100 * s.error);
    const RealValidationView view = view_of(v, args.costs.value_or(""));
    if (const double ratio = machine_speed_ratio(view); ratio > 0) {
      std::cout << fmt::format(
          "machine drift: a reference GEMM took {:+.1f}% around the run against the "
          "calibration; at the run's speed the error would be {:+.1f}%\n",
          100 * (ratio - 1), 100 * error_at_run_speed(view));
    }
    for (const executor::KindComparison& k : v.comparison.kinds) {
      std::cout << fmt::format(
          "  {:<10} busy {:>9.2f} ms measured, {:>9.2f} ms predicted ({:+.1f}%)\n",
          task_kind_name(k.kind), k.busy.measured_s * 1e3, k.busy.predicted_s * 1e3,
          100 * k.busy.error);
    }
    const executor::FeedbackFigures& f = v.feedback;
    if (f.available && f.held_steps > 0) {
      std::cout << fmt::format(
          "feedback: with the ops' in-step times the prediction is {:.2f} ms ({:+.1f}%); held "
          "out, the first {} steps' times predict the last {} steps' {:.2f} ms as {:.2f} ms "
          "({:+.1f}%, isolated costs {:+.1f}%)\n",
          f.predicted_s * 1e3, 100 * f.error, f.fed_steps, f.held_steps, f.held_measured_s * 1e3,
          f.held_predicted_s * 1e3, 100 * f.held_error, 100 * f.held_isolated_error);
    }
    if (args.update_costs)
      std::cout << "wrote " << *args.update_costs << " (in-step op times added)\n";
    std::cout << "wrote " << (out / "validation.json").string() << ", validation.md, trace.json\n";
  }
  return kExitOk;
}

}  // namespace

Command add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Run a scenario's step for real (MPI ranks on this machine's cores) and compare it with "
      "the prediction, task by task: writes validation.json, validation.md and trace.json");
  cmd->add_option("scenario", args->scenario,
                  "Scenario JSON file, or a folder of them: the suite (each case calibrated in "
                  "isolation, then run and compared; the table to OUT/validation-real.md)")
      ->required();
  cmd->add_option("--backend", args->backend, "Where the ranks run: cpu (cuda: not built yet)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--ranks", args->ranks,
                  "The ranks expected (the scenario's cluster sets them; a mismatch is an error)");
  cmd->add_option("--costs", args->costs,
                  "Price the prediction's ops with the measured model over this cost database "
                  "(the ranks lower with it too, so both run the same graph)");
  cmd->add_option("--costs-device", args->costs_device,
                  "The scenario device the --costs database prices");
  cmd->add_option("--set", args->sets, "Override a key before validation: a.b.c=VALUE");
  cmd->add_option("--iterations", args->iterations, "Measured steps (default 5)");
  cmd->add_option("--warmup", args->warmup, "Warm-up steps before them (default 2)");
  cmd->add_option("--timeout", args->timeout,
                  "End a run (every rank killed) or a calibration when it takes longer "
                  "(default 10min)");
  cmd->add_flag("--emulate-links", args->emulate_links,
                "Run each rank in a network namespace of its own, the paths between ranks "
                "emulated at the scenario's bandwidth and latency (root; MPI over TCP)");
  cmd->add_option("--out", args->out,
                  "Output folder (default dtsim-out/<scenario file's stem>-validation)");
  cmd->add_option("--update-costs", args->update_costs,
                  "Write the --costs database with each op's time measured inside the real "
                  "steps added (tagged in_step; the measured model prefers them) to this file");
  cmd->add_option("--doc", args->doc,
                  "With a folder of cases: write the suite's table here (docs/validation-real.md)");
  cmd->add_option("--rounds", args->rounds,
                  "With a folder of cases: calibrate and run every case this many times, in "
                  "rounds, each case's row its median round (default 1)");
  cmd->add_flag("--quiet", args->quiet, "Print nothing on success");
  return {cmd, [args] { return validate(*args); }};
}

}  // namespace dtsim::cli
