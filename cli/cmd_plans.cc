// `dtsim plans`: every (TP, PP) plan of a training scenario on its cluster, simulated on
// several threads: step time, throughput and peak memory per plan, out-of-memory plans
// marked, the fastest plan that fits named.
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.h"
#include "reports/atomic_file.h"
#include "reports/csv_tables.h"
#include "reports/headline_figures.h"
#include "reports/summary.h"
#include "runner/parallel_points.h"
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

// One plan's figures, or (not completed) why it does not apply or what failed.
struct PlanRow : HeadlineFigures {
  models::PlanPoint point;
  std::string problem;
};

PlanRow run_plan(const Scenario& base, const models::PlanPoint& point,
                 std::optional<int> micro_batch) {
  PlanRow row;
  row.point = point;
  try {
    Scenario scenario =
        load_scenario(plan_variant(base.document, point, micro_batch), base.source);
    const LoweredScenario lowered = lower_with_chosen_costs(scenario, {}, {}, memory_budget());
    const ScenarioRun run = run_scenario(scenario, lowered);
    SummaryOptions options;
    options.include_wall_time = false;
    static_cast<HeadlineFigures&>(row) = headline_figures(make_summary(lowered, run, options));
    if (!row.completed) row.problem = "the run did not complete";
  } catch (const InputError& e) {
    row.problem = describe_problems(e.problems(), "; ");
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
  run_points_in_parallel(points.size(), args.jobs,
                         [&](size_t i) { rows[i] = run_plan(base, points[i], args.micro_batch); });

  const int best_index = fastest_that_fits(rows);
  const PlanRow* best = best_index < 0 ? nullptr : &rows[static_cast<size_t>(best_index)];
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
    if (!r.problem.empty() && !r.completed) {
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
                           r.point.dp, r.completed ? 1 : 0, r.step_s, r.tokens_per_s, r.peak_bytes,
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
