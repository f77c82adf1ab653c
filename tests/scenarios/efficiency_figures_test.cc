// The efficiency figures are described once (sim/efficiency_figures.h): the JSON Schema,
// the docs' table and the loader agree with that table, key by key.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/efficiency_figures.h"
#include "sim/unit_parse.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using nlohmann::json;
using Type = EfficiencyFigure::Type;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The figure's default (DeviceEfficiency{}'s value) as a scenario writes it: "0.8", "5us",
// "4MiB", "1GFLOP".
std::string efficiency_default_text(const EfficiencyFigure& f) {
  const DeviceEfficiency d{};
  std::ostringstream out;
  switch (f.type) {
    case Type::kNumber:
      out << d.*f.number;
      break;
    case Type::kInteger:
      out << d.*f.integer;
      break;
    case Type::kDuration: {
      const int64_t ns = (d.*f.duration).count_ns();
      if (ns % 1000 == 0) {
        out << ns / 1000 << "us";
      } else {
        out << ns << "ns";
      }
      break;
    }
    case Type::kBytes: {
      const int64_t b = (d.*f.bytes).count();
      if (b % (int64_t{1} << 20) == 0) {
        out << (b >> 20) << "MiB";
      } else {
        out << b << "B";
      }
      break;
    }
    case Type::kFlops:
      out << d.*f.number / 1e9 << "GFLOP";
      break;
  }
  return out.str();
}

const json& schema_properties() {
  static const json schema =
      json::parse(slurp(std::string(DTSIM_SOURCE_DIR) + "/scenarios/schema/scenario.schema.json"));
  return schema["$defs"]["custom_device"]["properties"]["efficiency"]["properties"];
}

TEST(EfficiencyFigures, TheSchemaDescribesEachAsTheTableDoes) {
  const json& props = schema_properties();
  std::set<std::string> keys;
  for (const EfficiencyFigure& f : efficiency_figures()) {
    const std::string key(f.key);
    SCOPED_TRACE(key);
    keys.insert(key);
    ASSERT_TRUE(props.contains(key));
    const json& p = props[key];
    switch (f.type) {
      case Type::kNumber:
      case Type::kInteger: {
        EXPECT_EQ(p["type"], f.type == Type::kNumber ? "number" : "integer");
        EXPECT_EQ(p.value(f.low_included ? "minimum" : "exclusiveMinimum", json()), f.low);
        if (std::isfinite(f.high)) {
          EXPECT_EQ(p.value(f.high_included ? "maximum" : "exclusiveMaximum", json()), f.high);
        } else {
          EXPECT_FALSE(p.contains("maximum") || p.contains("exclusiveMaximum"));
        }
        EXPECT_EQ(p["default"].dump(), efficiency_default_text(f));
        break;
      }
      case Type::kDuration:
        EXPECT_EQ(p["$ref"], "#/$defs/duration");
        EXPECT_EQ(parse_duration(p["default"].get<std::string>()).value,
                  DeviceEfficiency{}.*f.duration);
        break;
      case Type::kBytes:
        EXPECT_EQ(p["$ref"], "#/$defs/size");
        EXPECT_EQ(parse_bytes(p["default"].get<std::string>()).value, DeviceEfficiency{}.*f.bytes);
        break;
      case Type::kFlops:
        EXPECT_EQ(p["$ref"], "#/$defs/flop_count");
        EXPECT_EQ(parse_flops(p["default"].get<std::string>()).value->count(),
                  DeviceEfficiency{}.*f.number);
        break;
    }
  }
  // Nothing else but the protocols' object, which is not a scalar figure.
  for (const auto& [key, value] : props.items()) {
    EXPECT_TRUE(keys.contains(key) || key == "collective_protocols") << key;
  }
}

TEST(EfficiencyFigures, TheDocsTableListsEachWithItsDefault) {
  std::istringstream doc(slurp(std::string(DTSIM_SOURCE_DIR) + "/docs/scenario-format.md"));
  std::map<std::string, std::string> defaults;  // key -> the row's default cell
  bool in_section = false;                      // from the efficiency paragraph to the next section
  for (std::string line; std::getline(doc, line);) {
    if (line.find("`efficiency` holds the figures") != std::string::npos) in_section = true;
    if (line.rfind("## ", 0) == 0) in_section = false;
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    const size_t a = line.find(" | ");
    const size_t b = line.find(" | ", a + 3);
    const size_t c = line.find(" | ", b + 3);
    if (a == std::string::npos || b == std::string::npos || c == std::string::npos) continue;
    const std::string keys = line.substr(2, a - 2);
    for (size_t q = keys.find('`'); q != std::string::npos; q = keys.find('`', q + 1)) {
      const size_t e = keys.find('`', q + 1);
      defaults.emplace(keys.substr(q + 1, e - q - 1), line.substr(b + 3, c - b - 3));
      q = e;
    }
  }
  for (const EfficiencyFigure& f : efficiency_figures()) {
    SCOPED_TRACE(std::string(f.key));
    ASSERT_TRUE(defaults.contains(std::string(f.key)));
    EXPECT_NE(defaults[std::string(f.key)].find(efficiency_default_text(f)), std::string::npos)
        << defaults[std::string(f.key)];
  }
}

// Every figure is read by the loader through the table: an allowed value lands in its
// member, and one out of range is an error at its key.
TEST(EfficiencyFigures, TheLoaderReadsEachThroughTheTable) {
  for (const EfficiencyFigure& f : efficiency_figures()) {
    SCOPED_TRACE(std::string(f.key));
    json ok, bad;
    switch (f.type) {
      case Type::kNumber:
        ok = !std::isfinite(f.high) ? f.low + 1 : f.high_included ? f.high : (f.low + f.high) / 2;
        bad = f.low - 1;
        break;
      case Type::kInteger:
        ok = static_cast<int64_t>(f.low) + 3;
        bad = static_cast<int64_t>(f.low) - 1;
        break;
      case Type::kDuration:
        ok = "7us";
        bad = "-1us";
        break;
      case Type::kBytes:
        ok = "3MiB";
        bad = "-1B";
        break;
      case Type::kFlops:
        ok = "3GFLOP";
        bad = "0GFLOP";
        break;
    }
    const auto doc = [&](const json& value) {
      json d = json::parse(R"({
        "cluster": {"devices": [{"name": "X1", "base": "H100", "efficiency": {}}],
                    "nodes": [{"count": 1, "device": "X1", "devices_per_node": 1, "nics": 0}]},
        "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]}})");
      d["cluster"]["devices"][0]["efficiency"][std::string(f.key)] = value;
      return d;
    };
    const Scenario s = load_scenario(doc(ok), "t.json");
    const DeviceEfficiency& e = s.cluster.owned_specs.at(0)->efficiency;
    switch (f.type) {
      case Type::kNumber:
        EXPECT_DOUBLE_EQ(e.*f.number, ok.get<double>());
        break;
      case Type::kInteger:
        EXPECT_EQ(e.*f.integer, ok.get<int>());
        break;
      case Type::kDuration:
        EXPECT_EQ(e.*f.duration, Duration::us(7));
        break;
      case Type::kBytes:
        EXPECT_EQ(e.*f.bytes, MiB(3));
        break;
      case Type::kFlops:
        EXPECT_DOUBLE_EQ(e.*f.number, 3e9);
        break;
    }
    try {
      load_scenario(doc(bad), "t.json");
      ADD_FAILURE() << "expected an error";
    } catch (const ScenarioError& err) {
      ASSERT_FALSE(err.problems().empty());
      EXPECT_EQ(err.problems()[0].pointer, "/cluster/devices/0/efficiency/" + std::string(f.key));
    }
  }
}

}  // namespace
}  // namespace dtsim
