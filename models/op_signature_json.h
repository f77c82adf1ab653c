// Op signatures as JSON, for the lowered-graph files that `dtsim lower` writes and
// scenarios read back (docs/scenario-format.md, "Lowered graphs"): one object per
// signature, fields at their defaults left out.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/op_operands.h"
#include "sim/op_signature.h"

namespace dtsim::models {

nlohmann::json op_signature_to_json(const OpSignature& op);
// Throws std::invalid_argument naming the field and what was expected.
OpSignature op_signature_from_json(const nlohmann::json& value);

// One op's bound operands as an array of [operand, role, layer, op, offset] (layer -1: the
// model's input).
nlohmann::json op_operands_to_json(const OpOperands& operands);
// Throws std::invalid_argument naming the entry and what was expected.
OpOperands op_operands_from_json(const nlohmann::json& value);

}  // namespace dtsim::models
