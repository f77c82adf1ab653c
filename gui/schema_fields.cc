// Reading the scenario schema into the form editor's field tree.
#include "gui/schema_fields.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace dtsim::gui {
namespace {

using json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 5> kQuantityDefs = {"duration", "size", "bandwidth",
                                                           "flop_rate", "flop_count"};

struct Resolved {
  json node;        // the schema node with its $ref chain merged in
  std::string def;  // the last $defs name on the chain ("" when none)
};

class FieldReader {
 public:
  explicit FieldReader(const json& schema) : schema_(schema) {}

  Field read(std::string key, const json& node, bool required) {
    const Resolved r = resolve(node);
    const json& n = r.node;
    Field f;
    f.key = std::move(key);
    f.required = required;
    f.description = n.value("description", "");
    if (n.contains("default")) f.default_value = n["default"];
    if (n.contains("minimum")) f.minimum = n["minimum"].get<double>();
    if (n.contains("maximum")) f.maximum = n["maximum"].get<double>();
    if (n.contains("enum") || n.contains("const")) {
      f.kind = FieldKind::kEnum;
      const json values = n.contains("enum") ? n["enum"] : json::array({n["const"]});
      for (const json& v : values)
        f.choices.push_back(v.is_string() ? v.get<std::string>() : v.dump());
      return f;
    }
    const std::string type =
        n.contains("type") && n["type"].is_string() ? n["type"].get<std::string>() : "";
    if (type == "object" || (type.empty() && n.contains("properties"))) {
      read_properties(n, f.children);
      f.kind = f.children.empty() ? FieldKind::kJson : FieldKind::kObject;
    } else if (type == "array") {
      const Resolved items = n.contains("items") ? resolve(n["items"]) : Resolved{};
      if (items.node.is_object() && items.node.value("type", "") == "object") {
        read_properties(items.node, f.children);
      }
      f.kind = f.children.empty() ? FieldKind::kJson : FieldKind::kObjectArray;
    } else if (type == "boolean") {
      f.kind = FieldKind::kBoolean;
    } else if (type == "integer") {
      f.kind = FieldKind::kInteger;
    } else if (type == "number") {
      f.kind = FieldKind::kNumber;
    } else if (type == "string") {
      if (std::find(kQuantityDefs.begin(), kQuantityDefs.end(), r.def) != kQuantityDefs.end()) {
        f.kind = FieldKind::kQuantity;
        f.unit = r.def;
      } else {
        f.kind = FieldKind::kText;
        if (f.key == "device" || f.key == "base") f.presets = Presets::kDevices;
        if (f.key == "preset") f.presets = Presets::kModels;
      }
    }  // else: several types (a rank set) or none: JSON text
    return f;
  }

 private:
  // Follows $ref into #/$defs/, the referring node's own keys (its description) winning.
  Resolved resolve(const json& node) const {
    Resolved r{node, ""};
    for (int depth = 0; r.node.is_object() && r.node.contains("$ref"); ++depth) {
      if (depth > 16) throw std::runtime_error("scenario schema: $ref chain too deep");
      const std::string ref = r.node["$ref"].get<std::string>();
      constexpr std::string_view prefix = "#/$defs/";
      if (ref.rfind(prefix, 0) != 0)
        throw std::runtime_error("scenario schema: unsupported $ref " + ref);
      r.def = ref.substr(prefix.size());
      const json& target = schema_.at("$defs").at(r.def);
      json merged = target;
      for (auto it = r.node.begin(); it != r.node.end(); ++it) {
        if (it.key() != "$ref") merged[it.key()] = it.value();
      }
      r.node = std::move(merged);
    }
    return r;
  }

  // The object's properties, then those of its if/then, oneOf and anyOf branches that it
  // does not have yet.
  void read_properties(const json& n, std::vector<Field>& out) {
    std::vector<std::string> required;
    if (n.contains("required")) required = n["required"].get<std::vector<std::string>>();
    auto add_from = [&](const json& branch) {
      const json b = resolve(branch).node;
      if (!b.is_object() || !b.contains("properties")) return;
      for (auto it = b["properties"].begin(); it != b["properties"].end(); ++it) {
        const bool seen =
            std::any_of(out.begin(), out.end(), [&](const Field& f) { return f.key == it.key(); });
        if (seen) continue;
        // A branch's own required keys apply on that branch only: the form does not mark them.
        const bool req_here = &branch == &n && std::find(required.begin(), required.end(),
                                                         it.key()) != required.end();
        out.push_back(read(it.key(), it.value(), req_here));
      }
    };
    add_from(n);
    for (const char* combinator : {"allOf", "oneOf", "anyOf"}) {
      if (!n.contains(combinator)) continue;
      for (const json& branch : n[combinator]) {
        if (branch.contains("then")) add_from(branch["then"]);
        if (branch.contains("else")) add_from(branch["else"]);
        add_from(branch);
      }
    }
  }

  const json& schema_;
};

void collect_paths(const Field& f, const std::string& prefix, std::vector<std::string>& out) {
  for (const Field& c : f.children) {
    const std::string path = prefix.empty() ? c.key : prefix + "." + c.key;
    out.push_back(path);
    collect_paths(c, c.kind == FieldKind::kObjectArray ? path + "[]" : path, out);
  }
}

}  // namespace

const Field* Field::child(std::string_view name) const {
  for (const Field& c : children) {
    if (c.key == name) return &c;
  }
  return nullptr;
}

Field scenario_fields(const nlohmann::ordered_json& schema) {
  FieldReader reader(schema);
  Field root = reader.read("", schema, true);
  root.kind = FieldKind::kObject;
  return root;
}

std::vector<std::string> field_paths(const Field& root) {
  std::vector<std::string> out;
  collect_paths(root, "", out);
  return out;
}

std::string quantity_example(std::string_view unit) {
  if (unit == "duration") return "e.g. 1.5us, 30ms";
  if (unit == "size") return "e.g. 80GiB, 25MB";
  if (unit == "bandwidth") return "e.g. 400Gbps, 25GB/s";
  if (unit == "flop_rate") return "e.g. 312TFLOPS";
  if (unit == "flop_count") return "e.g. 2.5TFLOP";
  return "";
}

}  // namespace dtsim::gui
