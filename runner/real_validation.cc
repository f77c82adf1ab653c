// validate_for_real: lower and simulate here, run the ranks under mpirun, read their
// timelines back, compare.
#include "runner/real_validation.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "calibration/calibrate.h"
#include "calibration/child_process.h"
#include "calibration/cost_database.h"
#include "calibration/mpirun.h"
#include "calibration/speed_reference.h"
#include "executor/rank_plan.h"
#include "kernels/kernel.h"
#include "reports/atomic_file.h"
#include "runner/cost_database_file.h"
#include "runner/cpu_quota.h"
#include "runner/emulated_network.h"
#include "runner/in_step_costs.h"
#include "runner/rank_timeline_file.h"
#include "scenarios/loader.h"
#include "sim/input_error.h"

namespace dtsim {

namespace {

// What the ranks cannot run is refused here, before mpirun starts, with the scenario named.
void check_runnable(const std::string& source, const LoweredScenario& lowered, int ranks) {
  if (lowered.training && lowered.training->model.mla()) {
    throw InputError(source, {{"/model",
                               "multi-head latent attention (kv_lora_rank) is simulated only: "
                               "the executor's "
                               "attention kernels take Q, K and V in one tensor of one head "
                               "width, and latent attention's are apart and of two"}});
  }
  if (lowered.local_graph) {
    throw InputError(source, {{"/parallelism/sync_every",
                               "local SGD alternates two step graphs; a real run executes one "
                               "(set sync_every to 1 to validate the synchronizing step)"}});
  }
  if (const int cores = std::max(calibration::usable_cores(), 1); ranks > cores) {
    throw InputError(source,
                     {{"/cluster", fmt::format("the step runs on {} ranks and this process may use "
                                               "{} cores: ranks sharing a core would time each "
                                               "other's work (one rank per core)",
                                               ranks, cores)}});
  }
  const TaskGraph& g = lowered.graph;
  if (const auto errors = g.validate(ranks); !errors.empty()) {
    throw InputError(source, {{"/workload", "the lowered graph cannot run: " + errors.front()}});
  }
  for (int r = 0; r < ranks; ++r) {
    try {
      executor::plan_rank(g, r);
    } catch (const std::invalid_argument& e) {
      throw InputError(source, {{"/workload", e.what()}});
    }
  }
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const TaskView t = g.task(id);
    if (t.kind == TaskKind::kMemcpy && t.memcpy_kind == MemcpyKind::kPeer) {
      throw InputError(source, {{"/workload", fmt::format("task {} (\"{}\") copies from another "
                                                          "rank's device, which CPU ranks do not "
                                                          "share",
                                                          id, t.name)}});
    }
    if (t.kind != TaskKind::kCompute || t.ops == kNoOps) continue;
    for (const OpSignature& op : g.op_list(t.ops)) {
      if (const std::string why = kernels::cpu_unsupported_reason(op); !why.empty()) {
        throw InputError(source, {{"/workload", fmt::format("task {} (\"{}\"), op \"{}\": the "
                                                            "CPU backend has no kernel for it "
                                                            "({})",
                                                            id, t.name, op.name, why)}});
      }
    }
  }
}

// Each rank's share of its core: its device's speed (a node group's compute_share, a
// unit's draw below its catalog figures). A rank cannot run faster than the core it has.
std::vector<double> core_shares(const std::string& source, const Cluster& cluster, int ranks) {
  std::vector<double> shares;
  for (int r = 0; r < ranks; ++r) {
    const double speed = cluster.devices.at(static_cast<size_t>(r)).speed;
    if (speed > 1) {
      throw InputError(source, {{"/cluster", fmt::format("rank {} runs at {:.3f} of its device's "
                                                         "figures; a real rank cannot run faster "
                                                         "than its core (speed_variation draws "
                                                         "above 1)",
                                                         r, speed)}});
    }
    shares.push_back(speed);
  }
  return shares;
}

std::vector<std::string> rank_command(const RealRunOptions& o, int ranks,
                                      const EmulatedNetwork* network, const CpuQuotas& quotas) {
  std::vector<std::string> program = {o.rank_program.string(), "--scenario",
                                      std::filesystem::absolute(o.scenario).string()};
  for (const std::string& s : o.overrides) program.insert(program.end(), {"--set", s});
  if (o.costs.database) {
    program.insert(program.end(),
                   {"--costs", std::filesystem::absolute(*o.costs.database).string()});
  }
  if (o.costs.device) program.insert(program.end(), {"--costs-device", *o.costs.device});
  program.insert(program.end(), {"--warmup", std::to_string(o.warmup), "--iterations",
                                 std::to_string(o.iterations), "--out",
                                 std::filesystem::absolute(o.folder).string()});
  const std::filesystem::path& cgroups = quotas.folder();
  if (!cgroups.empty() && quotas.binds_kernels()) {
    // A rank in an emulated namespace, whose own sysfs hides the cgroup hierarchy, reaches
    // it through this process's root.
    const std::filesystem::path seen =
        network ? std::filesystem::path("/proc/" + std::to_string(::getpid()) + "/root") /
                      cgroups.relative_path()
                : cgroups;
    program.insert(program.end(), {"--kernel-quota", seen.string()});
  } else if (!cgroups.empty() && !network) {
    // Ranks on this machine's own hosts join their quota's cgroup themselves; in emulated
    // namespaces the launch agent does.
    program.insert(program.end(), {"--cgroups", cgroups.string()});
  }
  if (network) {
    program.insert(program.end(), {"--pin-core", "1"});
    return calibration::mpirun_command(ranks, network->mpirun_options(), program, false);
  }
  // Shared memory between the ranks of this machine, as the collective probe measured it.
  return calibration::mpirun_command(ranks, {"--mca", "btl", "self,vader"}, program);
}

std::string task_words(const TaskGraph& g, uint32_t id) {
  if (id == executor::kNoTask || id >= g.num_tasks()) return "none";
  const TaskView t = g.task(id);
  return fmt::format("task {} \"{}\" ({}, stream {})", id, t.name, task_kind_name(t.kind),
                     g.streams()[t.stream]);
}

// `base` with the in-step times of the ops and collective calls of steps [0, end_step).
calibration::CostDatabase fed_with(const calibration::CostDatabase& base, const TaskGraph& graph,
                                   const Cluster& cluster, const executor::MeasuredRun& run,
                                   int end_step) {
  return with_in_step(
      base, in_step_entries(graph, run, 0, end_step),
      in_step_collectives(graph, cluster, run, 0, end_step, intra_node_ranks(base)));
}

// The prediction again with the in-step times of the ops and calls, over every step and
// held out.
executor::FeedbackFigures feed_back(const RealRunOptions& o, const TaskGraph& graph,
                                    const Cluster& cluster, const executor::MeasuredRun& run,
                                    const executor::StepComparison& c) {
  executor::FeedbackFigures f;
  if (!o.costs.database) {
    f.why_not = "the in-step times join a cost database: run with --costs";
    return f;
  }
  const calibration::CostDatabase base = read_cost_database_file(*o.costs.database);
  const calibration::CostDatabase fed = fed_with(base, graph, cluster, run, c.steps);
  f.available = true;
  f.predicted_s = predict_step(o, fed);
  f.error = executor::relative_error(f.predicted_s, c.step.measured_s);
  if (c.steps >= 2) {
    f.fed_steps = c.steps / 2;
    f.held_steps = c.steps - f.fed_steps;
    f.held_measured_s = executor::quantile(
        std::vector<double>(c.measured_steps_s.begin() + f.fed_steps, c.measured_steps_s.end()),
        0.5);
    f.held_isolated_error = executor::relative_error(c.step.predicted_s, f.held_measured_s);
    f.held_predicted_s = predict_step(o, fed_with(base, graph, cluster, run, f.fed_steps));
    f.held_error = executor::relative_error(f.held_predicted_s, f.held_measured_s);
  }
  if (o.update_costs) {
    write_file_atomically(*o.update_costs, calibration::cost_database_to_json(fed).dump(1) + "\n");
  }
  return f;
}

}  // namespace

std::vector<std::string> describe_rank_progress(const TaskGraph& graph,
                                                const std::filesystem::path& folder, int ranks,
                                                int steps) {
  std::vector<std::string> lines;
  for (int r = 0; r < ranks; ++r) {
    const auto p = executor::read_progress(rank_progress_path(folder, r));
    if (!p) {
      lines.push_back(fmt::format("rank {} never started (no progress board)", r));
      continue;
    }
    if (p->done) continue;
    if (p->step == 0) {
      lines.push_back(
          fmt::format("rank {} (pid {}) stopped before its first step (while "
                      "lowering, setting up its buffers and communicators, or "
                      "estimating its clock offset)",
                      r, p->pid));
      continue;
    }
    // Tasks on other streams may still run after the last start (a collective waiting for
    // a dead peer): the count says how many were in flight.
    const uint32_t running = p->started - p->finished;
    lines.push_back(fmt::format(
        "rank {} (pid {}) stopped in step {} of {} with {} of its tasks finished and {} in "
        "flight; last started: {}{}; last finished: {}",
        r, p->pid, p->step, steps, p->finished, running, task_words(graph, p->last_started),
        p->last_started != p->last_finished && running > 0 ? " (unfinished)" : "",
        task_words(graph, p->last_finished)));
  }
  return lines;
}

RealValidation validate_for_real(const RealRunOptions& o) {
  if (o.update_costs && !o.costs.database) {
    throw InputError("--update-costs", {{"",
                                         "the in-step times are added to a cost database: "
                                         "name it with --costs"}});
  }
  if (o.warmup < 0 || o.iterations < 1) {
    throw InputError("--iterations", {{"",
                                       "expected at least 1 measured step and 0 or more "
                                       "warm-up steps"}});
  }
  // The machine's speed is timed with OpenBLAS just before the run: first loaded there, its
  // worker threads would still be spinning beside that GEMM. Loaded now, they have stopped
  // by then, as when dtsim linked it.
  if (o.costs.database) kernels::load_cpu_blas();
  RunControl control;
  control.stop = o.stop;
  RealValidation v;
  v.scenario = std::make_unique<Scenario>(load_scenario_file(o.scenario, o.overrides));
  v.scenario->simulation.ranks_share_one_cpu = true;  // every rank runs on this machine
  v.lowered = lower_with_chosen_costs(*v.scenario, o.costs, control);
  if (v.lowered.cancelled) {
    v.cancelled = true;
    return v;
  }
  const TaskGraph& graph = v.lowered.graph;
  const int ranks = executor::graph_ranks(graph);
  check_runnable(v.scenario->source, v.lowered, ranks);
  if (o.emulate_links) {
    if (const std::string why = emulation_unavailable_reason(); !why.empty()) {
      throw std::runtime_error("--emulate-links: " + why);
    }
    if (!std::filesystem::exists(o.link_emulator)) {
      throw std::runtime_error("the link emulator " + o.link_emulator.string() + " is not built");
    }
  }
  if (!std::filesystem::exists(o.rank_program)) {
    throw std::runtime_error("the rank program " + o.rank_program.string() +
                             " is not built (this dtsim was configured without MPI: install "
                             "libopenmpi-dev and openmpi-bin, scripts/install-deps.sh)");
  }

  // The prediction, from the same lowered graph the ranks build.
  executor::PredictionRecorder recorder(graph.num_tasks());
  const ScenarioRun run = run_scenario(*v.scenario, v.lowered, {&recorder}, control);
  if (run.result.cancelled) {
    v.cancelled = true;
    return v;
  }
  v.predicted_step_s = run.result.end.seconds();
  v.predicted = recorder.tasks();

  std::filesystem::create_directories(o.folder);
  std::error_code ignored;
  std::filesystem::remove(o.folder / "doorbells", ignored);  // a new run's bells start at 0
  for (int r = 0; r < ranks; ++r) {
    std::filesystem::remove(rank_timeline_path(o.folder, r), ignored);
    std::filesystem::remove(rank_progress_path(o.folder, r), ignored);
  }
  // Slower devices as CPU quotas: on their compute threads while they run kernels (cgroup
  // v1), or on the whole rank from before MPI starts (v2).
  CpuQuotas quotas(core_shares(o.scenario, v.scenario->cluster, ranks));
  std::unique_ptr<EmulatedNetwork> network;
  if (o.emulate_links) {
    network = std::make_unique<EmulatedNetwork>(ranks, emulated_paths(v.scenario->cluster, ranks),
                                                o.link_emulator, o.folder / "network");
  }
  // One BLAS thread per rank (the rank sets it too; this covers the library's start-up).
  std::vector<std::string> env = {"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"};
  if (network && !quotas.folder().empty() && !quotas.binds_kernels())
    env.push_back("DTSIM_CPU_QUOTAS=" + quotas.folder().string());
  // The machine's speed just before and just after the run, to set beside the database's.
  const double reference_before = o.costs.database ? calibration::reference_kernel_s() : 0;
  const calibration::ChildResult r =
      calibration::run_child(rank_command(o, ranks, network.get(), quotas), env,
                             o.folder / "mpirun.log", o.timeout, o.stop);
  network.reset();  // the namespaces go before anything else can fail
  quotas.remove();
  if (o.costs.database && r.end == calibration::ChildResult::End::kExited && r.exit_code == 0) {
    v.calibration_reference_s = read_cost_database_file(*o.costs.database).device.reference_s;
    if (v.calibration_reference_s > 0)
      v.run_reference_s = (reference_before + calibration::reference_kernel_s()) / 2;
  }
  if (r.end == calibration::ChildResult::End::kStopped) {
    v.cancelled = true;
    return v;
  }
  if (r.end != calibration::ChildResult::End::kExited || r.exit_code != 0) {
    std::string where;
    for (const std::string& line :
         describe_rank_progress(graph, o.folder, ranks, o.warmup + o.iterations)) {
      where += "\n  " + line;
    }
    throw std::runtime_error(calibration::describe_failure("the real run (mpirun, dtsim-rank)", r) +
                             (where.empty() ? "" : "\nwhere the ranks were:" + where));
  }
  v.measured = read_rank_timelines(o.folder, ranks);
  v.comparison = executor::compare_step(graph, v.measured, v.predicted, v.predicted_step_s);
  const auto model = choose_cost_model(*v.scenario, o.costs);
  v.ops = compare_ops(graph, v.measured, [&](const OpSignature& op, int rank) {
    return model->price(op, *v.scenario->cluster.devices.at(static_cast<size_t>(rank)).spec)
        .time.seconds();
  });
  v.feedback = feed_back(o, graph, v.scenario->cluster, v.measured, v.comparison);
  return v;
}

RealValidationView view_of(const RealValidation& v, const std::string& costs) {
  RealValidationView view;
  view.scenario = v.scenario->name;
  view.source = v.scenario->source;
  view.cost_model = v.lowered.cost_model;
  view.costs = costs;
  view.graph = &v.lowered.graph;
  view.measured = &v.measured;
  view.comparison = &v.comparison;
  view.predicted = v.predicted;
  view.ops = v.ops;
  view.feedback = &v.feedback;
  view.calibration_reference_s = v.calibration_reference_s;
  view.run_reference_s = v.run_reference_s;
  return view;
}

double predict_step(const RealRunOptions& o, const calibration::CostDatabase& db) {
  Scenario scenario = load_scenario_file(o.scenario, o.overrides);
  scenario.simulation.ranks_share_one_cpu = true;
  const LoweredScenario lowered =
      lower_with_database(scenario, db, o.costs.device.value_or(db.device.catalog_name));
  return run_scenario(scenario, lowered).result.end.seconds();
}

}  // namespace dtsim
