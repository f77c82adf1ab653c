// Lowering a loaded scenario: the cost model it asks for, then its workload as a TaskGraph.
#include "scenarios/scenario_lowering.h"

#include <filesystem>
#include <stdexcept>

#include "models/cost_model.h"
#include "models/lowering.h"
#include "scenarios/json_reader.h"
#include "scenarios/loader.h"
#include "scenarios/training_loader.h"

namespace dtsim {

namespace {

// A database path as the scenario wrote it, resolved against the scenario's folder.
std::string scenario_relative(const Scenario& s, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || s.source.empty() || s.source.front() == '<') return path;
  return (std::filesystem::path(s.source).parent_path() / p).lexically_normal().string();
}

// Compute tasks that carry ops but no duration (priced by FLOPs) get their kernels' time on
// their rank's device.
void price_task_graph(const Cluster& cluster, const CostModel& costs, const RunControl& control,
                      LoweredScenario& out) {
  TaskGraph& g = out.graph;
  const auto n = static_cast<int64_t>(g.num_tasks());
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    if (id % static_cast<TaskId>(std::max<int64_t>(1, control.check_every)) == 0) {
      if (control.stop_requested()) {
        out.cancelled = true;
        return;
      }
      control.report("lowering", id, n);
    }
    const TaskView t = g.task(id);
    if (t.kind != TaskKind::kCompute) continue;
    if (t.ops == kNoOps) {
      ++out.costs.given.ops;
      out.costs.given.time += t.duration;
      continue;
    }
    const DeviceSpec& device = *cluster.devices[static_cast<size_t>(t.rank)].spec;
    Duration total;
    for (const OpSignature& op : g.op_list(t.ops)) {
      const OpCost c = costs.price(op, device);
      CostTally::Share& s = out.costs.of(c.source);
      ++s.ops;
      s.time += c.time;
      ++out.costs.launches.ops;
      out.costs.launches.time += device.efficiency.kernel_launch;
      total += c.time + device.efficiency.kernel_launch;
    }
    g.set_duration(id, total);
  }
}

void lower_training(const Scenario& s, const CostModel& costs, const RunControl& control,
                    LoweredScenario& out) {
  const TrainingSpec& spec = *s.training;
  models::LoweringInput in;
  in.cluster = &s.cluster;
  in.model = spec.model;
  in.training = spec.training;
  in.plan = spec.plan;
  in.costs = &costs;
  in.control = &control;
  scenario_detail::Diagnostics d;
  try {
    TrainingWorkload w;
    w.model = spec.model;
    w.training = spec.training;
    w.step = models::lower_training_step(in);
    out.cancelled = w.step.cancelled;
    if (spec.plan.sync_every > 1 && !out.cancelled) {
      in.global_sync = false;
      w.local_step = models::lower_training_step(in);
      out.cancelled = w.local_step->cancelled;
    }
    out.costs = w.step.costs;
    out.graph = std::move(w.step.graph);
    w.step.graph = TaskGraph{};
    out.training = std::move(w);
  } catch (const models::PlanError& e) {
    for (const std::string& m : e.messages()) scenario_detail::report_plan_error(m, d);
  } catch (const std::invalid_argument& e) {
    d.error("", e.what());
  }
  if (!d.empty()) throw ScenarioError(d.format(s.source));
}

}  // namespace

std::unique_ptr<CostModel> choose_cost_model(const Scenario& scenario,
                                             const std::optional<std::string>& costs_option) {
  if (costs_option) {
    throw ScenarioError({"--costs " + *costs_option +
                         ": the measured cost model reads a cost database written by `dtsim "
                         "calibrate`, which this build does not have yet; leave --costs out to "
                         "use the roofline model"});
  }
  if (scenario.simulation.cost_model == "measured") {
    throw ScenarioError({scenario.source + ": /simulation/cost_model: \"measured\" (costs " +
                         scenario_relative(scenario, scenario.simulation.costs_file.value_or("")) +
                         ") needs the cost database written by `dtsim calibrate`, which this "
                         "build does not have yet; use \"roofline\""});
  }
  return std::make_unique<models::RooflineCostModel>();
}

LoweredScenario lower_scenario(const Scenario& s, const CostModel& costs, const RunControl& control) {
  LoweredScenario out;
  out.source = s.source;
  out.name = s.name;
  out.network_model = s.simulation.network_model;
  out.cluster = &s.cluster;
  out.reference = s.reference;
  out.cost_model = costs.name();
  switch (s.workload_kind) {
    case WorkloadKind::kCollective: out.graph = build_collective_sweep_graph(s.collective); break;
    case WorkloadKind::kTaskGraph:
      out.graph = s.task_graph;
      price_task_graph(s.cluster, costs, control, out);
      break;
    case WorkloadKind::kTraining: lower_training(s, costs, control, out); break;
  }
  return out;
}

}  // namespace dtsim
