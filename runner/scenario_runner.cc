// Scenario execution: choose the costs, lower, build a Simulation, subscribe observers, run
// the TaskGraph, time it.
#include "runner/scenario_runner.h"

#include <chrono>
#include <filesystem>

#include <optional>
#include <set>

#include "calibration/measured_collective_model.h"
#include "calibration/measured_cost_model.h"
#include "runner/cost_database_file.h"
#include "runner/measured_links.h"
#include "models/cost_model.h"
#include "scenarios/loader.h"
#include "scenarios/scenario_lowering.h"
#include "sim/input_error.h"

namespace dtsim {

namespace {

// A database path as the scenario wrote it, resolved against the scenario's folder.
std::string scenario_relative(const Scenario& s, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || s.source.empty() || s.source.front() == '<') return path;
  return (std::filesystem::path(s.source).parent_path() / p).lexically_normal().string();
}

// The cost database the scenario or `choice` names, with the device it prices; none for
// the roofline.
struct ChosenDatabase {
  std::string path;
  calibration::CostDatabase db;
  std::string device;
};

std::optional<ChosenDatabase> choose_database(const Scenario& scenario, const CostsChoice& choice) {
  std::string path;
  if (choice.database) {
    path = *choice.database;
  } else if (scenario.simulation.cost_model == "measured") {
    path = scenario_relative(scenario, scenario.simulation.costs_file.value_or(""));
  } else {
    return std::nullopt;
  }
  ChosenDatabase chosen{path, read_cost_database_file(path), ""};
  const calibration::CostDatabase& db = chosen.db;
  chosen.device = choice.device.value_or(db.device.catalog_name);
  std::set<std::string> devices;
  for (const auto& d : scenario.cluster.devices) devices.insert(d.spec->name);
  if (!devices.contains(chosen.device)) {
    std::string have;
    for (const std::string& d : devices) have += (have.empty() ? "" : ", ") + d;
    const std::string pointer = choice.device ? "" : "/device/catalog_name";
    throw InputError(
        path, {{pointer, "measured on \"" + db.device.catalog_name + "\" (" + db.device.name + ")" +
                             (choice.device ? ", mapped to \"" + chosen.device + "\"," : "") +
                             " but the scenario's devices are " + have +
                             (choice.device ? ""
                                            : "; to price one of them with it "
                                              "anyway, name it with --costs-device")}});
  }
  return chosen;
}

std::unique_ptr<CostModel> model_of(const std::optional<ChosenDatabase>& chosen) {
  if (!chosen) return std::make_unique<models::RooflineCostModel>();
  return std::make_unique<calibration::MeasuredCostModel>(
      chosen->db, chosen->device, std::make_unique<models::RooflineCostModel>());
}

// Lowers with `chosen` (the roofline when none), its measured links in place first.
LoweredScenario lower_with(Scenario& scenario, const std::optional<ChosenDatabase>& chosen,
                           const RunControl& control, const MemoryBudget& budget) {
  std::vector<MeasuredLinkClass> links;
  if (chosen) links = use_measured_links(scenario, chosen->db.links, chosen->device);
  const auto costs = model_of(chosen);
  const MemoryEstimate estimate = estimate_memory(scenario, *costs, budget.outputs);
  const MemoryLimit limit = memory_limit(budget.max_bytes);
  if (estimate.total() > limit.bytes) throw MemoryLimitError(scenario.source, estimate, limit);
  LoweredScenario lowered = lower_scenario(scenario, *costs, control);
  lowered.measured_links = std::move(links);
  if (chosen && !chosen->db.links.empty()) {
    auto measured =
        std::make_shared<calibration::MeasuredCollectiveModel>(chosen->db.links, chosen->device);
    if (!measured->empty()) lowered.collective_costs = std::move(measured);
  }
  return lowered;
}

}  // namespace

std::unique_ptr<CostModel> choose_cost_model(const Scenario& scenario, const CostsChoice& choice) {
  return model_of(choose_database(scenario, choice));
}

LoweredScenario lower_with_chosen_costs(Scenario& scenario, const CostsChoice& choice,
                                        const RunControl& control, const MemoryBudget& budget) {
  return lower_with(scenario, choose_database(scenario, choice), control, budget);
}

LoweredScenario lower_with_database(Scenario& scenario, const calibration::CostDatabase& db,
                                    const std::string& device, const RunControl& control,
                                    const MemoryBudget& budget) {
  return lower_with(scenario, ChosenDatabase{"<in memory>", db, device}, control, budget);
}

ScenarioRun run_scenario(const Scenario& scenario, const LoweredScenario& lowered,
                         const std::vector<SimObserver*>& observers, const RunControl& control) {
  const auto t0 = std::chrono::steady_clock::now();
  SimulationOptions options;
  options.network_model = scenario.simulation.network_model;
  // One key for both exact shortcuts that skip repeated work: rounds and phases.
  options.fast_forward = scenario.simulation.fast_forward;
  options.phase_replay = scenario.simulation.fast_forward;
  options.ranks_share_one_cpu = scenario.simulation.ranks_share_one_cpu;
  options.collective_costs = lowered.collective_costs.get();
  Simulation sim(scenario.cluster, options);
  for (SimObserver* o : observers) sim.add_observer(o);
  ScenarioRun run;
  run.result = sim.run(lowered.graph, control);
  if (lowered.local_graph && !run.result.cancelled) {
    Simulation local(scenario.cluster, options);
    run.local_step = local.run(*lowered.local_graph, control);
    run.result.cancelled = run.local_step->cancelled;
  }
  for (const LoweredScenario::PhaseGraph& phase : lowered.phase_graphs) {
    if (run.result.cancelled) break;
    Simulation at(scenario.cluster, options);
    const RunResult r = at.run(phase.graph, control);
    run.result.cancelled = r.cancelled;
    run.phase_steps_s.push_back(r.end.seconds());
  }
  run.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const LinkStatsTable& table = sim.network().link_stats();
  run.links.reserve(table.size());
  for (LinkId l = 0; l < table.size(); ++l) run.links.push_back(table.stats(l));
  return run;
}

}  // namespace dtsim
