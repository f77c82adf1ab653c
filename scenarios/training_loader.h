// The training sections of a scenario (`model`, `training`, `parallelism`, `reference`):
// read and checked without the cluster; lowering (scenarios/scenario_lowering.h) checks the
// plan against the cluster.
#pragma once

#include <optional>
#include <string>

#include "models/lowering.h"
#include "scenarios/json_reader.h"
#include "scenarios/scenario.h"

namespace dtsim::scenario_detail {

struct TrainingSection {
  TrainingSpec spec;
  bool valid = false;
};

// `model`, `training` and `parallelism` values (nullptr when absent); `source` resolves a
// relative hf_config path.
std::optional<TrainingSection> read_training(const json* model, const json* training,
                                             const json* parallelism, const std::string& source,
                                             Diagnostics& d);
std::optional<Reference> read_reference(const json& value, const std::string& pointer,
                                        Diagnostics& d);
// Fills out.workload_kind and, when the section is valid, out.training.
void resolve_training(const TrainingSection& section, Scenario& out);

}  // namespace dtsim::scenario_detail
