// The scalar figures of a device's `efficiency` (DeviceEfficiency, sim/device.h) described
// once: scenario key, type, range and the model that reads each. The loader reads a custom
// device's `efficiency` object through this table, and tests check the JSON Schema and the
// table in docs/scenario-format.md against it, so that the four cannot drift apart.
#pragma once

#include <span>
#include <string_view>

#include "sim/device.h"

namespace dtsim {

struct EfficiencyFigure {
  enum class Type : uint8_t { kNumber, kInteger, kDuration, kBytes, kFlops };
  std::string_view key;
  Type type = Type::kNumber;
  // kNumber and kInteger: the values allowed; kFlops: low only (a positive count).
  double low = 0;
  double high = 0;
  bool low_included = false;
  bool high_included = false;
  std::string_view expected;  // for error messages: "a fraction in (0, 1]"
  // What prices or models with it: "roofline" (models/cost_model.h), "runtime" (the task
  // runtime), "cluster" (link capacities), "memory" (the lowering's memory over time).
  std::string_view used_by;
  // The member it sets (the one that matches `type`).
  double DeviceEfficiency::*number = nullptr;
  int DeviceEfficiency::*integer = nullptr;
  Duration DeviceEfficiency::*duration = nullptr;
  Bytes DeviceEfficiency::*bytes = nullptr;
};

std::span<const EfficiencyFigure> efficiency_figures();

}  // namespace dtsim
