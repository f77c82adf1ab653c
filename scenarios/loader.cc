// The loader's front end: file and JSON syntax errors, overrides, the top-level keys and
// the simulation section; cluster and workload have their own files.
#include "scenarios/loader.h"

#include <filesystem>

#include "scenarios/cluster_loader.h"
#include "scenarios/json_document.h"
#include "scenarios/json_reader.h"
#include "scenarios/training_loader.h"
#include "scenarios/workload_loader.h"
#include "sim/network_model.h"

namespace dtsim {

namespace scenario_detail {

namespace {

constexpr std::string_view kWorkloadKinds[] = {"collective", "task_graph"};

SimulationSettings read_simulation(const json* value, const std::string& pointer, Diagnostics& d) {
  SimulationSettings out;
  if (value == nullptr) return out;
  auto o = JsonObject::open(*value, pointer, d);
  if (!o) return out;
  std::vector<std::string_view> models;
  for (const NetworkModelInfo& info : network_models()) models.push_back(info.name);
  if (auto v = o->choice("network_model", Need::kOptional, models, "network model")) {
    out.network_model = std::string(models[*v]);
  }
  if (auto v = o->boolean("trace", Need::kOptional)) out.trace = *v;
  if (auto v = o->integer("trace_ranks", Need::kOptional, 1)) out.trace_ranks = static_cast<int>(*v);
  if (auto v = o->boolean("fast_forward", Need::kOptional)) out.fast_forward = *v;
  static constexpr std::string_view kCostModels[] = {"roofline", "measured"};
  if (auto v = o->choice("cost_model", Need::kOptional, kCostModels, "cost model")) {
    out.cost_model = std::string(kCostModels[*v]);
  }
  if (auto v = o->string("costs", Need::kOptional)) {
    if (v->empty()) {
      d.error(o->pointer("costs"), "expected the path of a cost database, got an empty string");
    } else {
      out.costs_file = *v;
    }
  }
  if (auto v = o->choice("granularity", Need::kOptional,
                         names_of(models::kAllGranularities, models::granularity_name),
                         "task granularity")) {
    out.granularity = models::kAllGranularities[*v];
  }
  if (out.cost_model == "measured" && !out.costs_file) {
    d.error(o->pointer("cost_model"),
            "\"measured\" needs \"costs\": the cost database to read (dtsim calibrate writes one)");
  }
  if (out.cost_model == "roofline" && out.costs_file) {
    d.error(o->pointer("costs"), "applies only with \"cost_model\": \"measured\"");
  }
  o->report_unknown_keys();
  return out;
}

}  // namespace

std::optional<WorkloadSpec> read_workload(const json& value, const std::string& pointer,
                                          Diagnostics& d) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return std::nullopt;
  const auto kind = o->choice("kind", Need::kRequired, kWorkloadKinds, "workload kind");
  // Without a kind, which keys belong here is unknown: report nothing more.
  if (!kind) return std::nullopt;
  WorkloadSpec out;
  if (*kind == 0) {
    out.kind = WorkloadKind::kCollective;
    out.sweep = read_sweep(*o);
  } else {
    out.kind = WorkloadKind::kTaskGraph;
    out.graph = read_task_graph(*o);
  }
  o->report_unknown_keys();
  return out;
}

void resolve_workload(const WorkloadSpec& spec, const Cluster& cluster, Diagnostics& d,
                      Scenario& out) {
  out.workload_kind = spec.kind;
  if (spec.kind == WorkloadKind::kCollective) {
    resolve_sweep(spec.sweep, cluster, d, out.collective);
  } else {
    resolve_task_graph(spec.graph, cluster, d, out.task_graph);
    if (spec.graph.local_graph_file) {
      out.local_task_graph = read_graph_file(*spec.graph.local_graph_file,
                                             spec.graph.local_graph_file_pointer, cluster, d);
      out.sync_every = spec.graph.sync_every;
    }
  }
}

}  // namespace scenario_detail

using scenario_detail::Diagnostics;
using scenario_detail::JsonObject;
using scenario_detail::Need;

Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ScenarioError(path, {{"", "cannot read the file: it is a directory"}});
  }
  std::string error;
  const std::optional<std::string> text = read_input_file(path, error);
  if (!text) throw ScenarioError(path, {{"", error}});
  std::vector<InputProblem> problems;
  std::optional<nlohmann::json> document = parse_json_strictly(*text, problems);
  if (!document) throw ScenarioError(path, std::move(problems));
  return load_scenario(std::move(*document), path, overrides);
}

Scenario load_scenario(nlohmann::json document, const std::string& source,
                       const std::vector<std::string>& overrides) {
  std::vector<InputProblem> override_errors;
  for (const std::string& assignment : overrides) {
    if (std::string error = apply_override(document, assignment); !error.empty()) {
      override_errors.push_back({"", "--set " + assignment + ": " + error});
    }
  }
  // Validating a half-overridden document would report problems the user did not write.
  if (!override_errors.empty()) throw ScenarioError(source, std::move(override_errors));

  Diagnostics d;
  std::string name;
  std::string description;
  std::optional<scenario_detail::LoadedCluster> cluster;
  std::optional<scenario_detail::WorkloadSpec> workload;
  std::optional<scenario_detail::TrainingSection> training;
  std::optional<Reference> reference;
  SimulationSettings simulation;
  {
    auto root = JsonObject::open(document, "", d);
    if (!root) throw ScenarioError(source, d.items());
    // "$schema" lets editors find scenarios/schema/scenario.schema.json.
    root->string("$schema", Need::kOptional);
    name = root->string("name", Need::kOptional)
               .value_or(std::filesystem::path(source).stem().string());
    description = root->string("description", Need::kOptional).value_or("");
    if (const nlohmann::json* v = root->get("cluster", Need::kRequired, "an object")) {
      cluster = scenario_detail::read_cluster(*v, root->pointer("cluster"), d);
    }
    // A training scenario describes its step by model, set-up and plan instead of a
    // workload section.
    const bool is_training = root->has("model") || root->has("training") || root->has("parallelism");
    if (is_training) {
      if (root->has("workload")) {
        d.error("/workload", "a training scenario (with \"model\", \"training\" or "
                             "\"parallelism\") has no workload section");
      }
      training = scenario_detail::read_training(root->get("model", Need::kOptional, ""),
                                                root->get("training", Need::kOptional, ""),
                                                root->get("parallelism", Need::kOptional, ""),
                                                source, d);
    } else if (const nlohmann::json* v = root->get("workload", Need::kRequired,
                                                   "an object with a kind (or a training "
                                                   "scenario's \"model\")")) {
      workload = scenario_detail::read_workload(*v, root->pointer("workload"), d);
    }
    if (const nlohmann::json* v = root->get("reference", Need::kOptional, "")) {
      reference = scenario_detail::read_reference(*v, root->pointer("reference"), d);
    }
    const nlohmann::json* sim = root->get("simulation", Need::kOptional, "");
    simulation = scenario_detail::read_simulation(sim, root->pointer("simulation"), d);
    if (!is_training && sim != nullptr && sim->is_object() && sim->contains("granularity")) {
      d.error(root->pointer("simulation") + "/granularity",
              "applies to training scenarios only: a workload's tasks are as its file gives them");
    }
    root->report_unknown_keys();
  }
  // Without a valid cluster the workload's ranks cannot be checked; what was found so far
  // is the whole report.
  if (!cluster) throw ScenarioError(source, d.items());

  // The cluster is built in place: moving a Cluster copies its Boost graph.
  Scenario scenario{.source = source,
                    .name = std::move(name),
                    .description = std::move(description),
                    .document = {},
                    .cluster_spec = cluster->spec,
                    .cluster = build_cluster(cluster->spec),
                    .simulation = std::move(simulation),
                    .workload_kind = WorkloadKind::kCollective,
                    .collective = {},
                    .training = {},
                    .task_graph = {},
                    .local_task_graph = {},
                    .reference = std::move(reference)};
  // The specs move as unique_ptrs, so the node groups' pointers stay valid.
  scenario.cluster.owned_specs = std::move(cluster->owned_specs);
  if (workload && workload->graph.graph_file) {
    // Paths in a scenario are relative to the scenario file.
    for (std::optional<std::string>* path :
         {&workload->graph.graph_file, &workload->graph.local_graph_file}) {
      if (!*path) continue;
      const std::filesystem::path file(**path);
      if (file.is_relative() && source.front() != '<') {
        *path = (std::filesystem::path(source).parent_path() / file).string();
      }
    }
    scenario.reprice_task_graph = workload->graph.reprice;
  }
  if (workload) scenario_detail::resolve_workload(*workload, scenario.cluster, d, scenario);
  if (training) scenario_detail::resolve_training(*training, scenario);
  if (!d.empty()) throw ScenarioError(source, d.items());
  scenario.document = std::move(document);
  return scenario;
}

}  // namespace dtsim
