// `dtsim plans`: every (TP, PP) plan of a training scenario on its cluster, simulated on
// several threads: step time, throughput and peak memory per plan, out-of-memory plans
// marked, the fastest plan that fits named.
#include <atomic>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "reports/atomic_file.h"
#include "reports/csv_tables.h"
#include "reports/summary.h"
#include "runner/plan_variants.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"

namespace dtsim::cli {
namespace {

struct PlansArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::optional<int> micro_batch;
  std::string csv;
  unsigned jobs = 0;
};

struct PlanRow {
  models::PlanPoint point;
  bool ran = false;
  double step_s = 0;
  double tokens_per_s = 0;
  double peak_bytes = 0;
  int oom_ranks = 0;
  std::string problem;  // why the plan does not apply, or what failed
};

PlanRow run_plan(const Scenario& base, const models::PlanPoint& point,
                 std::optional<int> micro_batch) {
  PlanRow row;
  row.point = point;
  try {
    const Scenario scenario =
        load_scenario(plan_variant(base.document, point, micro_batch), base.source);
    const LoweredScenario lowered = lower_with_chosen_costs(scenario);
    const ScenarioRun run = run_scenario(scenario, lowered);
    SummaryOptions options;
    options.include_wall_time = false;
    const auto summary = make_summary(lowered, run, options);
    const auto& t = summary["training"];
    row.ran = run.result.stalled.empty();
    if (!row.ran) row.problem = "the run did not complete";
    row.step_s = t["iteration_time_s"].get<double>();
    row.tokens_per_s = t["tokens_per_s"].get<double>();
    row.peak_bytes = t["max_peak_memory_bytes"].get<double>();
    row.oom_ranks = t["oom_ranks"].get<int>();
  } catch (const InputError& e) {
    for (const InputProblem& p : e.problems()) {
      row.problem += (row.problem.empty() ? "" : "; ") +
                     (p.pointer.empty() ? "" : p.pointer + ": ") + p.message;
    }
  } catch (const std::exception& e) {
    row.problem = std::string("internal error: ") + e.what();
  }
  return row;
}

int plans(const PlansArgs& args) {
  const Scenario base = load_scenario_file(args.scenario, args.sets);
  if (!base.training) {
    std::cerr << "error: " << args.scenario
              << ": the plan grid needs a training scenario (model, training, parallelism)\n";
    return kExitBadInput;
  }
  const std::vector<models::PlanPoint> points = plan_points(base);
  std::vector<PlanRow> rows(points.size());
  std::atomic<size_t> next{0};
  const unsigned jobs =
      std::max(1u, std::min<unsigned>(args.jobs ? args.jobs : std::thread::hardware_concurrency(),
                                      static_cast<unsigned>(points.size())));
  std::vector<std::jthread> threads;
  for (unsigned j = 0; j < jobs; ++j) {
    threads.emplace_back([&] {
      for (size_t i; (i = next++) < points.size();)
        rows[i] = run_plan(base, points[i], args.micro_batch);
    });
  }
  threads.clear();  // joins

  const PlanRow* best = nullptr;
  for (const PlanRow& r : rows) {
    if (r.ran && r.oom_ranks == 0 && (!best || r.step_s < best->step_s)) best = &r;
  }
  std::cout << fmt::format("{} plans of {} on {} ranks ({} GPUs per node), micro-batch {}:\n\n",
                           rows.size(), base.name, base.cluster.num_ranks(),
                           devices_per_node_of(base.cluster_spec),
                           args.micro_batch.value_or(base.training->training.micro_batch));
  std::cout << fmt::format("  {:>4} {:>4} {:>5} {:>12} {:>14} {:>11}  {}\n", "tp", "pp", "dp",
                           "step (s)", "tokens/s", "peak (GiB)", "");
  for (const PlanRow& r : rows) {
    const std::string mark = &r == best ? "fastest that fits"
                             : r.oom_ranks > 0
                                 ? fmt::format("out of memory on {} ranks", r.oom_ranks)
                                 : "";
    if (!r.problem.empty() && !r.ran) {
      std::cout << fmt::format("  {:>4} {:>4} {:>5} {:>12} {:>14} {:>11}  not valid: {}\n",
                               r.point.tp, r.point.pp, r.point.dp, "-", "-", "-", r.problem);
      continue;
    }
    std::cout << fmt::format("  {:>4} {:>4} {:>5} {:>12.4f} {:>14.0f} {:>11.1f}  {}\n", r.point.tp,
                             r.point.pp, r.point.dp, r.step_s, r.tokens_per_s,
                             r.peak_bytes / (1 << 30), mark);
  }
  if (!best) std::cout << "\nno plan fits in memory\n";
  if (!args.csv.empty()) {
    const std::filesystem::path folder = std::filesystem::path(args.csv).parent_path();
    if (!folder.empty()) std::filesystem::create_directories(folder);
    write_file_atomically(args.csv, [&](std::ostream& out) {
      out << "tp,pp,dp,valid,step_s,tokens_per_s,peak_memory_bytes,oom_ranks,best,problem\n";
      for (const PlanRow& r : rows) {
        // Doubles in full (shortest round-trip form), so that a reader gets the same figures.
        out << fmt::format("{},{},{},{},{},{},{:.0f},{},{},{}\n", r.point.tp, r.point.pp,
                           r.point.dp, r.ran ? 1 : 0, r.step_s, r.tokens_per_s, r.peak_bytes,
                           r.oom_ranks, &r == best ? 1 : 0, csv_field(r.problem));
      }
    });
    std::cout << "wrote " << args.csv << "\n";
  }
  return kExitOk;
}

}  // namespace

Command add_plans_command(CLI::App& app) {
  auto args = std::make_shared<PlansArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plans",
      "Simulate every (TP, PP) plan of a training scenario on its cluster; mark out-of-memory "
      "plans and the fastest plan that fits");
  cmd->add_option("scenario", args->scenario, "Scenario JSON file (a training step)")->required();
  cmd->add_option("--set", args->sets,
                  "Override a key before validation: a.b.c=VALUE (repeatable)");
  cmd->add_option("--micro-batch", args->micro_batch, "Run every plan with this micro-batch")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--csv", args->csv, "Also write one row per plan to this CSV file");
  cmd->add_option("--jobs", args->jobs, "Plans simulated at once (default: one per core)");
  return {cmd, [args] { return plans(*args); }};
}

}  // namespace dtsim::cli
