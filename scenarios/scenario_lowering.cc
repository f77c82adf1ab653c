// Lowering a loaded scenario: the cost model it asks for, then its workload as a TaskGraph.
#include "scenarios/scenario_lowering.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include "models/chunk_cost.h"
#include "models/lowering.h"
#include "models/task_crowding.h"
#include "scenarios/json_reader.h"
#include "scenarios/loader.h"
#include "scenarios/training_loader.h"
#include "sim/resolve_algorithms.h"
#include "sim/simulation.h"

namespace dtsim {

namespace {

// Compute tasks that carry ops but no duration (priced by FLOPs), or every compute task
// with ops when `reprice`, get their kernels' time on their rank's device, tallied by
// source. Returns false when stopped through `control`. Tasks share op lists (every rank
// of a stage runs the same ones), so each list is priced once per device type.
bool price_task_graph(const Cluster& cluster, const CostModel& costs, bool reprice,
                      const RunControl& control, TaskGraph& g, CostTally& tally) {
  struct Priced {
    Duration time;
    CostTally tally;
  };
  std::map<std::pair<OpListId, const DeviceSpec*>, Priced> priced_lists;
  const auto n = static_cast<int64_t>(g.num_tasks());
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    if (static_cast<int64_t>(id) % std::max<int64_t>(1, control.check_every) == 0) {
      if (control.stop_requested()) return false;
      control.report("lowering", id, n);
    }
    const TaskView t = g.task(id);
    if (t.kind != TaskKind::kCompute) continue;
    if (t.ops == kNoOps || (!reprice && t.duration > Duration::zero())) {
      ++tally.given.ops;
      tally.given.time += t.duration;
      continue;
    }
    const DeviceSpec* device = cluster.devices[static_cast<size_t>(t.rank)].spec;
    auto [it, fresh] = priced_lists.try_emplace({t.ops, device});
    if (fresh) {
      models::PricedOps priced;
      for (const OpSignature& op : g.op_list(t.ops))
        priced.push_back(models::price_op(op, *device, costs));
      it->second = {models::total_time(priced), models::tally_of(priced)};
    }
    tally.add(it->second.tally);
    g.set_duration(id, it->second.time);
  }
  return true;
}

models::LoweringInput lowering_input(const Scenario& s, const CostModel& costs,
                                     const RunControl& control) {
  const TrainingSpec& spec = *s.training;
  models::LoweringInput in;
  in.cluster = &s.cluster;
  in.model = spec.model;
  in.training = spec.training;
  in.plan = spec.plan;
  in.costs = &costs;
  in.granularity = s.simulation.granularity;
  in.control = &control;
  return in;
}

// Runs `lower` and turns a plan that cannot run into a ScenarioError at the keys it names.
template <typename Lower>
void with_plan_errors(const Scenario& s, Lower lower) {
  scenario_detail::Diagnostics d;
  try {
    lower();
  } catch (const models::PlanError& e) {
    for (const InputProblem& p : e.problems()) d.error(p.pointer, p.message);
  } catch (const std::invalid_argument& e) {
    d.error("", e.what());
  }
  if (!d.empty()) throw ScenarioError(s.source, d.items());
}

// The problems of a batch-size phase's step, at the phase's key instead of global_batch.
models::PlanError at_phase(const Scenario& s, const models::PlanError& e) {
  std::vector<InputProblem> problems = e.problems();
  const std::string key = "/training/" + s.training->batch_schedule_key;
  for (InputProblem& p : problems) {
    if (p.pointer == "/training/global_batch") {
      p.pointer = key;
      p.message = "a phase's global batch: " + p.message;
    } else {
      p.message = "at a batch-size phase (" + key + "): " + p.message;
    }
  }
  return models::PlanError(std::move(problems));
}

// `fn(in, batch)` for each batch of the schedule that is simulated, `in` set up for it,
// until it returns false; a plan error of a phase is reported at the schedule's key.
template <typename Fn>
void for_each_phase(const Scenario& s, models::LoweringInput in, Fn fn) {
  in.global_sync = true;
  // Phases after the run's end run no step: their batches are not simulated.
  const models::TrainingSetup& t = in.training;
  const int64_t seq =
      models::is_transformer(in.model.family) ? (t.seq_len > 0 ? t.seq_len : in.model.seq_len) : 1;
  const double total = t.samples_to_train(seq).value_or(std::numeric_limits<double>::infinity());
  std::vector<models::BatchPhase> run;
  const auto iterations = models::phase_iterations(t.batch_phases, total);
  for (size_t i = 0; i < iterations.size(); ++i) {
    if (iterations[i].iterations > 0) run.push_back(t.batch_phases[i]);
  }
  for (int64_t batch : models::simulated_batches(run, models::kMostSimulatedPhases)) {
    in.training.global_batch = batch;
    try {
      if (!fn(in, batch)) return;
    } catch (const models::PlanError& e) {
      throw at_phase(s, e);
    }
  }
}

// The steps of a batch-size schedule at the batches it simulates, on the main step's
// pipeline split (a balanced split would otherwise follow each phase's micro-batches).
void lower_phases(const Scenario& s, models::LoweringInput in, const models::ParallelPlan& main,
                  LoweredScenario& out) {
  if (in.plan.balance_stages) {
    in.plan.stage_layers = main.stage_layers;
    in.plan.balance_stages = false;
  }
  for_each_phase(s, in, [&](const models::LoweringInput& at, int64_t batch) {
    models::LoweredStep step = models::lower_training_step(at);
    out.cancelled = step.cancelled;
    resolve_auto_algorithms(step.graph, s.cluster);
    out.phase_graphs.push_back({batch, std::move(step.graph)});
    return !out.cancelled;
  });
}

void lower_training(const Scenario& s, const CostModel& costs, const RunControl& control,
                    LoweredScenario& out) {
  const TrainingSpec& spec = *s.training;
  models::LoweringInput in = lowering_input(s, costs, control);
  with_plan_errors(s, [&] {
    TrainingWorkload w;
    w.model = spec.model;
    w.training = spec.training;
    w.granularity = s.simulation.granularity;
    w.step = models::lower_training_step(in);
    out.cancelled = w.step.cancelled;
    if (spec.plan.sync_every > 1 && !out.cancelled) {
      in.global_sync = false;
      models::LoweredStep local = models::lower_training_step(in);
      out.cancelled = local.cancelled;
      out.local_graph = std::move(local.graph);
      out.sync_every = spec.plan.sync_every;
    }
    if (!out.cancelled) lower_phases(s, in, w.step.plan, out);
    out.costs = w.step.costs;
    out.graph = std::move(w.step.graph);
    w.step.graph = TaskGraph{};
    out.training = std::move(w);
  });
}

}  // namespace

LoweredCounts estimate_lowered_counts(const Scenario& s, const CostModel& costs, bool observed) {
  LoweredCounts out;
  // The network's share is planned on a Simulation of the scenario's cluster, from the
  // graph where it exists before lowering (a training step's does not).
  SimulationOptions options;
  options.network_model = s.simulation.network_model;
  options.phase_replay = s.simulation.fast_forward && !observed;
  Simulation network(s.cluster, options);
  switch (s.workload_kind) {
    case WorkloadKind::kCollective: {
      const TaskGraph sweep = build_collective_sweep_graph(s.collective);
      out.graph = sweep.counts();
      out.network_bytes = network.network_bytes_for(&sweep);
      break;
    }
    case WorkloadKind::kTaskGraph: {
      // Repricing sets every compute task's duration, and a rank stored once whose price
      // changes gets records of its own (TaskGraph::set_duration): count every rank's.
      const auto priced = [&](const TaskGraph& g) {
        TaskGraphCounts c = g.counts();
        if (s.reprice_task_graph) {
          c.records = c.tasks;
          c.stored_dependencies = c.dependencies;
          c.stored_transfers = c.transfers;
        }
        return c;
      };
      out.graph = priced(s.task_graph);
      out.network_bytes = network.network_bytes_for(&s.task_graph);
      if (s.local_task_graph) {
        out.local_graph = priced(*s.local_task_graph);
        out.network_bytes =
            std::max(out.network_bytes, network.network_bytes_for(&*s.local_task_graph));
      }
      break;
    }
    case WorkloadKind::kTraining: {
      const RunControl none;
      models::LoweringInput in = lowering_input(s, costs, none);
      with_plan_errors(s, [&] {
        const models::StepEstimate step = models::estimate_step(in);
        out.graph = step.graph;
        out.lowering_working_bytes = step.working_bytes;
        if (s.training->plan.sync_every > 1) {
          in.global_sync = false;
          const models::StepEstimate local = models::estimate_step(in);
          out.local_graph = local.graph;
          out.lowering_working_bytes = std::max(out.lowering_working_bytes, local.working_bytes);
        }
        for_each_phase(s, in, [&](const models::LoweringInput& at, int64_t) {
          out.phase_graphs.push_back(models::estimate_step(at).graph);
          return true;
        });
      });
      out.network_bytes = network.network_bytes_for(nullptr);
      break;
    }
  }
  return out;
}

LoweredScenario lower_scenario(const Scenario& s, const CostModel& costs,
                               const RunControl& control) {
  LoweredScenario out;
  out.source = s.source;
  out.name = s.name;
  out.network_model = s.simulation.network_model;
  out.cluster = &s.cluster;
  out.reference = s.reference;
  out.cost_model = costs.name();
  switch (s.workload_kind) {
    case WorkloadKind::kCollective:
      out.graph = build_collective_sweep_graph(s.collective);
      break;
    case WorkloadKind::kTaskGraph:
      out.graph = s.task_graph;
      out.cancelled =
          !price_task_graph(s.cluster, costs, s.reprice_task_graph, control, out.graph, out.costs);
      if (s.local_task_graph && !out.cancelled) {
        // cost_sources counts the synchronizing step's kernels, as a training scenario's does.
        out.local_graph = *s.local_task_graph;
        out.sync_every = s.sync_every;
        CostTally local;
        out.cancelled = !price_task_graph(s.cluster, costs, s.reprice_task_graph, control,
                                          *out.local_graph, local);
      }
      break;
    case WorkloadKind::kTraining:
      lower_training(s, costs, control, out);
      break;
  }
  // The step's algorithms, settled where an executor and the lowered-graph writer read
  // them (a collective sweep keeps `auto` as one of the choices it compares).
  if (s.workload_kind != WorkloadKind::kCollective && !out.cancelled) {
    resolve_auto_algorithms(out.graph, s.cluster);
    if (out.local_graph) resolve_auto_algorithms(*out.local_graph, s.cluster);
    models::set_task_crowding(s.cluster, costs, out.graph);
    if (out.local_graph) models::set_task_crowding(s.cluster, costs, *out.local_graph);
    for (LoweredScenario::PhaseGraph& phase : out.phase_graphs) {
      models::set_task_crowding(s.cluster, costs, phase.graph);
    }
  }
  return out;
}

}  // namespace dtsim
