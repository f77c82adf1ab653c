// The training sections of a scenario (`model`, `training`, `parallelism`, `reference`):
// read without the cluster, then lowered to a TaskGraph once the cluster is built.
#pragma once

#include <optional>
#include <string>

#include "models/lowering.h"
#include "scenarios/json_reader.h"
#include "scenarios/scenario.h"

namespace dtsim::scenario_detail {

struct TrainingSpec {
  models::ModelSpec model;
  models::TrainingSetup training;
  models::ParallelPlan plan;
  bool valid = false;
};

// `model`, `training` and `parallelism` values (nullptr when absent); `source` resolves a
// relative hf_config path.
std::optional<TrainingSpec> read_training(const json* model, const json* training,
                                          const json* parallelism, const std::string& source,
                                          Diagnostics& d);
std::optional<Reference> read_reference(const json& value, const std::string& pointer,
                                        Diagnostics& d);
// Lowers the spec on `out.cluster` and fills out.training and out.graph.
void resolve_training(const TrainingSpec& spec, Diagnostics& d, Scenario& out);

}  // namespace dtsim::scenario_detail
