// Training figures from a run of a lowered training step.
#include "reports/training_summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "models/batch_schedule.h"
#include "models/cost_model.h"
#include "models/workload.h"

namespace dtsim {

namespace {

// A batch-size schedule's phases, each with its step: simulated at its batch, or
// interpolated between the simulated ones and the main step (models/batch_schedule.h).
struct PhasePlan {
  std::vector<models::PhaseIterations> phases;
  std::vector<double> step_s;
  std::vector<bool> simulated;
  double samples = 0;
};
PhasePlan plan_phases(const LoweredScenario& scenario, const ScenarioRun& run, double total,
                      double iteration) {
  const TrainingWorkload& tw = *scenario.training;
  PhasePlan out;
  std::map<int64_t, double> simulated{{tw.step.samples_per_iteration, iteration}};
  for (size_t i = 0; i < scenario.phase_graphs.size() && i < run.phase_steps_s.size(); ++i) {
    simulated[scenario.phase_graphs[i].global_batch] = run.phase_steps_s[i];
  }
  out.phases = models::phase_iterations(tw.training.batch_phases, total);
  for (const models::PhaseIterations& p : out.phases) {
    out.step_s.push_back(models::interpolated_step(simulated, p.global_batch));
    out.simulated.push_back(simulated.count(p.global_batch) > 0);
    out.samples += static_cast<double>(p.samples);
  }
  return out;
}

// The whole run's parts (models/training_run.h) around `iterations` steps of `iteration` s
// after the schedule's phases.
models::RunParts run_parts(const TrainingWorkload& tw, const models::LoweredStep& step,
                           const Cluster& cluster, double iterations, double iteration,
                           const PhasePlan& phases) {
  const models::TrainingSetup& t = tw.training;
  models::RunStep rs;
  rs.iterations = iterations;
  rs.iteration_s = iteration;
  for (size_t i = 0; i < phases.phases.size(); ++i) {
    rs.phases.push_back({static_cast<double>(phases.phases[i].iterations), phases.step_s[i],
                         static_cast<double>(phases.phases[i].global_batch)});
  }
  rs.samples_per_iteration = static_cast<double>(step.samples_per_iteration);
  rs.nodes = std::max<int>(1, static_cast<int>(cluster.nodes.size()));
  const models::PerParameterBytes per = models::per_parameter_bytes(t.precision, t.optimizer);
  rs.checkpoint_bytes = static_cast<double>(step.model_params) * (per.weights + per.optimizer);
  if (t.run.eval_every > 0 && rs.samples_per_iteration > 0) {
    const models::Workload w = models::build_workload(
        tw.model, models::WorkloadShape{1, t.seq_len, t.precision, t.flash_attention});
    rs.eval_s_per_sample =
        iteration / rs.samples_per_iteration * models::forward_share(w, t.recompute_policy());
  }
  return models::training_run_parts(t.run, rs);
}

}  // namespace

RankStats rank_stats_per_iteration(const LoweredScenario& scenario, const ScenarioRun& run,
                                   int rank) {
  RankStats st = run.result.ranks[rank];
  if (!run.local_step) return st;
  const RankStats& local = run.local_step->ranks[rank];
  const double local_weight = (scenario.sync_every - 1.0) / scenario.sync_every;
  const auto mix = [&](Duration sync, Duration loc) {
    return Duration::from_seconds((1 - local_weight) * sync.seconds() +
                                  local_weight * loc.seconds());
  };
  st.compute = mix(st.compute, local.compute);
  st.communication = mix(st.communication, local.communication);
  st.exposed_communication = mix(st.exposed_communication, local.exposed_communication);
  st.waiting = mix(st.waiting, local.waiting);
  st.waiting_p2p = mix(st.waiting_p2p, local.waiting_p2p);
  st.idle = mix(st.idle, local.idle);
  st.peak_memory = std::max(st.peak_memory, local.peak_memory);
  st.out_of_memory = st.out_of_memory || local.out_of_memory;
  return st;
}

nlohmann::ordered_json make_training_summary(const LoweredScenario& scenario,
                                             const ScenarioRun& run) {
  const TrainingWorkload& tw = *scenario.training;
  const models::LoweredStep& step = tw.step;
  const models::ParallelPlan& plan = step.plan;
  const Cluster& cluster = scenario.cluster_ref();
  const double iteration = mean_iteration_seconds(scenario, run);
  nlohmann::ordered_json s;
  s["model"] = tw.model.name;
  s["family"] = models::model_family_name(tw.model.family);
  s["parameters"] = step.model_params;
  s["plan"] = {{"dp", plan.dp},
               {"tp", plan.tp},
               {"pp", plan.pp},
               {"cp", plan.cp},
               {"ep", plan.ep},
               {"etp", plan.etp},
               {"virtual_stages", plan.virtual_stages},
               {"schedule", models::schedule_name(plan.schedule)},
               {"zero_stage", plan.zero_stage},
               {"sequence_parallel", plan.sequence_parallel},
               {"tp_comm_overlap", plan.tp_comm_overlap},
               {"bucket_bytes", plan.bucket.count()},
               {"overlap_grad_reduce", plan.overlap_grad_reduce},
               {"sync_every", plan.sync_every},
               {"shard_classifier", plan.shard_classifier},
               {"replica_micro_batch", plan.replica_micro_batch},
               {"tp_shares", plan.tp_shares}};
  if (plan.zero_stage == 3) {
    s["plan"]["overlap_param_gather"] = plan.overlap_param_gather;
    s["plan"]["per_parameter_gather"] = plan.per_parameter_gather;
    if (plan.per_parameter_gather) s["plan"]["persistence_threshold"] = plan.persistence_threshold;
    s["plan"]["gather_copies_per_rank"] = plan.gather_copies_per_rank;
    s["plan"]["grad_all_reduce"] = plan.grad_all_reduce;
  }
  s["precision"] = models::precision_name(tw.training.precision);
  s["recompute"] = models::recompute_name(tw.training.recompute);
  if (tw.training.recompute == models::Recompute::kSelective) {
    auto modules = nlohmann::ordered_json::array();
    for (models::RecomputeModule m : models::kAllRecomputeModules) {
      if (tw.training.recompute_modules & models::module_bit(m)) {
        modules.push_back(models::recompute_module_name(m));
      }
    }
    s["recompute_modules"] = std::move(modules);
  }
  if (tw.training.recompute == models::Recompute::kFull) {
    s["recompute_method"] = models::recompute_method_name(tw.training.recompute_method);
    s["recompute_num_layers"] = tw.training.recompute_num_layers;
  }
  if (tw.training.offload_layers > 0) s["offload_layers"] = tw.training.offload_layers;
  s["granularity"] = models::granularity_name(tw.granularity);
  s["micro_batches"] = step.micro_batches;
  s["samples_per_iteration"] = step.samples_per_iteration;
  s["tokens_per_iteration"] = step.tokens_per_iteration;
  if (run.local_step) {
    s["local_iteration_time_s"] = run.local_step->end.seconds();
    s["sync_iteration_time_s"] = run.result.end.seconds();
  }
  s["iteration_time_s"] = iteration;
  s["samples_per_s"] = iteration > 0 ? step.samples_per_iteration / iteration : 0.0;
  s["tokens_per_s"] = iteration > 0 ? step.tokens_per_iteration / iteration : 0.0;
  s["model_flops_per_iteration"] = step.model_flops_per_iteration;
  const int n = cluster.num_ranks();
  double peak_sum = 0;
  // Each device's peak for the math its GEMMs run in (a P40's fp16 GEMMs run in fp32).
  const DType math = models::math_dtype(tw.training.precision);
  for (const ClusterDevice& d : cluster.devices) {
    peak_sum += d.spec->peak_for(models::gemm_math_dtype(math, *d.spec)).flops_per_second();
  }
  const double achieved = iteration > 0 ? step.model_flops_per_iteration / iteration : 0.0;
  s["achieved_tflops_per_device"] = achieved / n / 1e12;
  s["mfu"] = peak_sum > 0 ? achieved / peak_sum : 0.0;
  const double total = tw.training
                           .samples_to_train(step.tokens_per_iteration /
                                             std::max<int64_t>(step.samples_per_iteration, 1))
                           .value_or(0);
  const PhasePlan phases = plan_phases(scenario, run, total, iteration);
  double iterations = 0;
  if (tw.training.iterations) {
    iterations = static_cast<double>(*tw.training.iterations);
  } else if (total > 0) {
    iterations = std::ceil(std::max(0.0, total - phases.samples) /
                           static_cast<double>(step.samples_per_iteration));
  }
  double phase_iterations = 0;
  for (const models::PhaseIterations& p : phases.phases) phase_iterations += p.iterations;
  if (iterations + phase_iterations > 0) {
    s["iterations_to_train"] = iterations + phase_iterations;
    const models::RunParts parts = run_parts(tw, step, cluster, iterations, iteration, phases);
    s["time_to_train_s"] = parts.total();
    s["run"] = {{"steps_s", parts.steps},           {"input_wait_s", parts.input_wait},
                {"eval_s", parts.eval},             {"checkpoint_s", parts.checkpoint},
                {"startup_s", parts.startup},       {"input_bound", parts.input_bound}};
    if (!phases.phases.empty()) {
      auto list = nlohmann::ordered_json::array();
      for (size_t i = 0; i < phases.phases.size(); ++i) {
        list.push_back({{"global_batch", phases.phases[i].global_batch},
                        {"iterations", phases.phases[i].iterations},
                        {"iteration_time_s", phases.step_s[i]},
                        {"simulated", static_cast<bool>(phases.simulated[i])}});
      }
      s["run"]["batch_phases"] = std::move(list);
      s["run"]["main_iterations"] = iterations;
    }
  } else {
    s["time_to_train_s"] = nullptr;
  }

  auto ranks = nlohmann::ordered_json::array();
  double max_compute = 0, max_exposed = 0, max_bubble = 0, max_mem = 0;
  int oom = 0;
  for (int r = 0; r < n; ++r) {
    const RankStats st = rank_stats_per_iteration(scenario, run, r);
    const models::RankRole& role = step.roles[r];
    const double bubble = st.waiting_p2p.seconds();
    ranks.push_back({{"rank", r},
                     {"device", cluster.devices[r].spec->name},
                     {"dp", role.dp},
                     {"pp", role.pp},
                     {"tp", role.tp},
                     {"cp", role.cp},
                     {"layers", role.layers},
                     {"micro_batch", role.micro_batch},
                     {"params", role.params},
                     {"model_state_bytes", role.model_state_bytes},
                     {"activation_bytes_peak", role.activation_bytes_peak},
                     {"comm_buffer_bytes", role.comm_buffer_bytes},
                     {"workspace_bytes", role.workspace_bytes},
                     {"compute_s", st.compute.seconds()},
                     {"exposed_comm_s", st.exposed_communication.seconds()},
                     {"bubble_s", bubble},
                     {"waiting_s", (st.waiting - st.waiting_p2p).seconds()},
                     {"idle_s", st.idle.seconds()},
                     {"peak_memory_bytes", st.peak_memory.count()},
                     {"memory_capacity_bytes", st.memory_capacity.count()},
                     {"oom", st.out_of_memory}});
    max_compute = std::max(max_compute, st.compute.seconds());
    max_exposed = std::max(max_exposed, st.exposed_communication.seconds());
    max_bubble = std::max(max_bubble, bubble);
    max_mem = std::max(max_mem, static_cast<double>(st.peak_memory.count()));
    oom += st.out_of_memory ? 1 : 0;
  }
  s["max_compute_s"] = max_compute;
  s["max_exposed_comm_s"] = max_exposed;
  s["max_bubble_s"] = max_bubble;
  s["max_peak_memory_bytes"] = max_mem;
  s["oom_ranks"] = oom;
  s["notes"] = step.notes;
  s["ranks"] = std::move(ranks);
  return s;
}

nlohmann::ordered_json make_reference_summary(const Reference& reference,
                                              const nlohmann::ordered_json& training) {
  nlohmann::ordered_json s;
  s["source"] = reference.source;
  s["metric"] = reference.metric;
  s["reference"] = reference.value;
  const auto& v = training[reference.metric];
  if (v.is_number()) {
    const double predicted = v.get<double>();
    s["predicted"] = predicted;
    s["error"] = reference.value != 0 ? (predicted - reference.value) / reference.value : 0.0;
  } else {
    s["predicted"] = nullptr;
    s["error"] = nullptr;
  }
  if (!reference.note.empty()) s["note"] = reference.note;
  return s;
}

}  // namespace dtsim
