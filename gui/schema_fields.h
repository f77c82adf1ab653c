// The scenario schema read as the form editor's tree of fields: which keys exist, what each
// holds and how it is edited, so that the form has one source of truth and no hand-written
// form per key.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::gui {

enum class FieldKind {
  kObject,       // a group of keys (the schema's properties)
  kObjectArray,  // a list of objects of one shape (node groups, tasks, WAN links)
  kEnum,         // one of a few strings
  kBoolean,
  kInteger,
  kNumber,
  kQuantity,  // a number with a unit: a duration, size, bandwidth, FLOP rate or count
  kText,      // a free string; `presets` lists the catalog's names when it has them
  kJson,      // anything else (a list of ranks, a rank set, a map): edited as JSON text
};

// Where a text field's drop-down comes from.
enum class Presets { kNone, kDevices, kModels };

struct Field {
  std::string key;
  std::string description;
  FieldKind kind = FieldKind::kJson;
  std::string unit;  // kQuantity: "duration", "size", "bandwidth", "flop_rate", "flop_count"
  std::vector<std::string> choices;  // kEnum
  Presets presets = Presets::kNone;
  nlohmann::ordered_json default_value;  // null when the schema gives none
  std::optional<double> minimum;
  std::optional<double> maximum;
  bool required = false;
  // kObject: its keys; kObjectArray: the keys of each item.
  std::vector<Field> children;

  const Field* child(std::string_view name) const;
};

// The field tree of a scenario document under `schema` (scenarios/schema/
// scenario.schema.json): $refs resolved, the keys of every branch of an if/then, oneOf or
// anyOf merged into their object (the loader says which apply); keys in the schema's order.
Field scenario_fields(const nlohmann::ordered_json& schema);

// Every key of the tree as a dotted path with "[]" for the items of a list
// ("cluster.nodes[].count"), depth first in schema order.
std::vector<std::string> field_paths(const Field& root);

// An example of what a quantity field takes ("400Gbps"), for its placeholder text.
std::string quantity_example(std::string_view unit);

}  // namespace dtsim::gui
