// Tests' shorthand for the three steps: load a scenario, lower it with the roofline model,
// keep both together (the lowered scenario points at the loaded one's cluster).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/cost_model.h"
#include "scenarios/loader.h"
#include "scenarios/scenario_lowering.h"

namespace dtsim::test_support {

struct Prepared {
  Scenario scenario;
  LoweredScenario lowered;
};

inline const CostModel& roofline() {
  static const models::RooflineCostModel model;
  return model;
}

inline std::unique_ptr<Prepared> prepare(nlohmann::json document,
                                         const std::string& source = "t.json",
                                         const std::vector<std::string>& overrides = {}) {
  auto p = std::unique_ptr<Prepared>(
      new Prepared{load_scenario(std::move(document), source, overrides), {}});
  p->lowered = lower_scenario(p->scenario, roofline());
  return p;
}

inline std::unique_ptr<Prepared> prepare_file(const std::string& path,
                                              const std::vector<std::string>& overrides = {}) {
  auto p = std::unique_ptr<Prepared>(new Prepared{load_scenario_file(path, overrides), {}});
  p->lowered = lower_scenario(p->scenario, roofline());
  return p;
}

}  // namespace dtsim::test_support
