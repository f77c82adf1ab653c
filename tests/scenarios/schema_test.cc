// Tests of scenarios/schema/scenario.schema.json: it agrees with the loader (names, unit
// patterns, strictness), and the example and benchmark scenarios validate against it.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenarios/loader.h"
#include "sim/cluster_spec.h"
#include "sim/network_model.h"
#include "sim/unit_parse.h"

namespace dtsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSourceDir = DTSIM_SOURCE_DIR;
const std::string kSchemaPath = kSourceDir + "/scenarios/schema/scenario.schema.json";
const std::string kValidator = kSourceDir + "/scenarios/schema/validate.py";

json load_schema() {
  std::ifstream in(kSchemaPath);
  return json::parse(in);
}

std::set<std::string> enum_of(const json& schema) {
  std::set<std::string> out;
  for (const auto& v : schema.at("enum")) out.insert(v.get<std::string>());
  return out;
}

TEST(ScenarioSchema, IsDraft202012) {
  const json schema = load_schema();
  EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema.at("required"), json::parse(R"(["cluster"])"));
}

TEST(ScenarioSchema, NamesMatchTheCode) {
  const json defs = load_schema().at("$defs");
  std::set<std::string> ops;
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter,
                          CollectiveOp::kAllGather, CollectiveOp::kBroadcast, CollectiveOp::kReduce,
                          CollectiveOp::kAllToAll, CollectiveOp::kSendRecv}) {
    ops.insert(std::string(collective_op_name(op)));
  }
  EXPECT_EQ(enum_of(defs.at("collective_op")), ops);
  std::set<std::string> algorithms;
  for (auto a : kAllCollectiveAlgorithms) {
    algorithms.insert(std::string(algorithm_name(a)));
  }
  EXPECT_EQ(enum_of(defs.at("collective_algorithm")), algorithms);
  std::set<std::string> dtypes;
  for (DType t : kAllDTypes) dtypes.insert(std::string(dtype_name(t)));
  EXPECT_EQ(enum_of(defs.at("task").at("properties").at("dtype")), dtypes);
  std::set<std::string> peaks;
  for (const auto& [key, value] : defs.at("custom_device").at("properties").at("peak").at("properties").items()) {
    peaks.insert(key);
  }
  EXPECT_EQ(peaks, dtypes);
  std::set<std::string> models;
  for (const auto& m : network_models()) models.insert(std::string(m.name));
  EXPECT_EQ(enum_of(defs.at("simulation").at("properties").at("network_model")), models);
  std::set<std::string> fabrics;
  for (auto k : {FabricKind::kNone, FabricKind::kSingleSwitch, FabricKind::kFatTree,
                 FabricKind::kRailOptimized, FabricKind::kThinTree, FabricKind::kTorus}) {
    fabrics.insert(std::string(fabric_kind_name(k)));
  }
  EXPECT_EQ(enum_of(defs.at("fabric").at("properties").at("kind")), fabrics);
  std::set<std::string> intra;
  for (auto k : {IntraNodeKind::kNvSwitch, IntraNodeKind::kNvLinkMesh, IntraNodeKind::kPcie}) {
    intra.insert(std::string(intra_node_kind_name(k)));
  }
  EXPECT_EQ(enum_of(defs.at("node_group").at("properties").at("intra")), intra);
  std::set<std::string> kinds;
  for (auto k : {TaskKind::kCompute, TaskKind::kCollective, TaskKind::kSend, TaskKind::kRecv,
                 TaskKind::kMemcpy, TaskKind::kAlloc, TaskKind::kFree}) {
    kinds.insert(std::string(task_kind_name(k)));
  }
  EXPECT_EQ(enum_of(defs.at("task").at("properties").at("kind")), kinds);
  std::set<std::string> directions;
  for (auto k : {MemcpyKind::kHostToDevice, MemcpyKind::kDeviceToHost, MemcpyKind::kDeviceToDevice,
                 MemcpyKind::kPeer}) {
    directions.insert(std::string(memcpy_kind_name(k)));
  }
  EXPECT_EQ(enum_of(defs.at("task").at("properties").at("direction")), directions);
}

// ---- helpers that run python3 ----------------------------------------------------------

bool have_python(const char* module) {
  const std::string command = std::string("python3 -c 'import ") + module + "' >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The schema's unit patterns accept exactly what sim/unit_parse.h parses, on a sample of
// good and bad strings. Python's re is what validate.py's jsonschema uses (std::regex is
// avoided: GCC's sanitizer builds warn inside <regex>).
TEST(ScenarioSchema, UnitPatternsMatchTheParser) {
  if (!have_python("re")) GTEST_SKIP() << "python3 is not installed";
  const std::vector<std::string> common = {"", "1", "x", "-1", "inf", "nan", "0x10", "1..5", "1e"};
  json samples;
  auto add = [&](const std::string& name, auto parse, std::vector<std::string> texts) {
    texts.insert(texts.end(), common.begin(), common.end());
    for (const std::string& t : texts) samples[name].push_back({t, parse(t).value.has_value()});
  };
  add("duration", parse_duration,
      {"1.5us", "30 ms", " 1us ", "0ns", "5.min", "1e3ns", ".5s", "1µs", "-1us", "1 us", "inf s",
       "1eus", "1h", "2min", "1 Ms", "1sec", "1e-3s", "+1s"});
  add("size", parse_bytes,
      {"80GiB", "1MiB", "0B", "1 KB", "1.5TB", "1b", "1kB", "4TiB", "1PB", "2 MiB "});
  add("bandwidth", parse_bandwidth,
      {"400Gbps", "25GB/s", "0Gbps", "0.0Gbps", "0.5Gbps", "1e9B/s", "0e5Gbps", "1GiB/s", "1TiB/s",
       "1 Mbps", "1KiB/s", "1gbps", "100 GB/s"});
  add("flop_rate", parse_flop_rate,
      {"312TFLOPS", "0FLOPS", "1PFLOPS", "1 GFLOPS", "1TFLOP", "2.5TFLOPS"});
  add("flop_count", parse_flops, {"1.2TFLOP", "4e13", "0", "1EFLOP", "1FLOPS", "40 TFLOP", "1GFLOP"});
  const std::string samples_path = write_temp("unit_samples.json", samples.dump());
  const std::string script_path = write_temp("unit_samples.py", R"py(import json, re, sys
schema = json.load(open(sys.argv[1], encoding="utf-8"))
samples = json.load(open(sys.argv[2], encoding="utf-8"))
bad = 0
for name, cases in samples.items():
    pattern = schema["$defs"][name]["pattern"]
    for text, parses in cases:
        if (re.search(pattern, text) is not None) != parses:
            print(f"{name}: pattern and parser disagree on {text!r} (parser accepts: {parses})")
            bad = 1
sys.exit(bad)
)py");
  const CommandResult r = run("python3 '" + script_path + "' '" + kSchemaPath + "' '" + samples_path + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");
  std::remove(samples_path.c_str());
  std::remove(script_path.c_str());
}

// Every object schema that lists properties closes itself and documents every property;
// the workload dispatcher is the one open object (its kind-specific branches close). The
// walk skips conditions (if/then/else/not/anyOf), which only restate properties.
void check_strictness(const json& node, const std::string& where) {
  if (!node.is_object()) return;
  if (node.contains("properties") && where != "/$defs/workload") {
    EXPECT_EQ(node.value("additionalProperties", json(true)), json(false)) << where;
    for (const auto& [key, property] : node.at("properties").items()) {
      EXPECT_TRUE(property.contains("description")) << where << "/properties/" << key;
      check_strictness(property, where + "/properties/" + key);
    }
  }
  if (node.contains("items")) check_strictness(node.at("items"), where + "/items");
  if (node.contains("oneOf")) {
    for (size_t i = 0; i < node.at("oneOf").size(); ++i) {
      check_strictness(node.at("oneOf")[i], where + "/oneOf/" + std::to_string(i));
    }
  }
  if (node.contains("$defs")) {
    for (const auto& [name, def] : node.at("$defs").items()) check_strictness(def, where + "/$defs/" + name);
  }
}

TEST(ScenarioSchema, ObjectsAreClosedAndDocumented) {
  check_strictness(load_schema(), "");
}

// ---- validation with python3-jsonschema -------------------------------------------------

bool have_jsonschema() { return have_python("jsonschema"); }

CommandResult run_validator(const std::vector<std::string>& files) {
  std::string command = "python3 '" + kValidator + "' '" + kSchemaPath + "'";
  for (const auto& f : files) command += " '" + f + "'";
  return run(command);
}

// Files named bad*.json are examples of rejected input.
bool expected_bad(const fs::path& p) { return p.filename().string().starts_with("bad"); }

// The validation scenarios are schema-checked only: lowering thousands of ranks is the
// job of `dtsim reproduce`, not of a unit test run under sanitizers. The calibration runs
// are run by tests/reports/calibration_test.cc.
std::vector<fs::path> scenario_files(bool with_validation = false) {
  std::vector<fs::path> files;
  std::vector<const char*> dirs = {"scenarios/examples", "scenarios/bench"};
  if (with_validation) {
    dirs.push_back("scenarios/validation");
    dirs.push_back("scenarios/calibration");
  }
  for (const char* dir : dirs) {
    const fs::path root = fs::path(kSourceDir) / dir;
    if (!fs::is_directory(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ScenarioSchema, ExamplesAndBenchmarksValidate) {
  if (!have_jsonschema()) GTEST_SKIP() << "python3-jsonschema is not installed";
  const auto files = scenario_files(true);
  if (files.empty()) GTEST_SKIP() << "no scenario files under scenarios/examples or scenarios/bench yet";
  for (const fs::path& f : files) {
    const CommandResult r = run_validator({f.string()});
    if (expected_bad(f)) {
      EXPECT_EQ(r.status, 1) << f << " should be rejected:\n" << r.output;
    } else {
      EXPECT_EQ(r.status, 0) << r.output;
    }
  }
}

TEST(ScenarioSchema, ExamplesAndBenchmarksLoad) {
  const auto files = scenario_files();
  if (files.empty()) GTEST_SKIP() << "no scenario files under scenarios/examples or scenarios/bench yet";
  for (const fs::path& f : files) {
    try {
      load_scenario_file(f.string());
      EXPECT_FALSE(expected_bad(f)) << f << " should be rejected";
    } catch (const ScenarioError& e) {
      EXPECT_TRUE(expected_bad(f)) << e.what();
    }
  }
}

// Documents the loader accepts; the schema must accept them too.
const std::vector<std::string> kGood = {
    R"({"$schema": "../schema/scenario.schema.json", "name": "n", "description": "d",
        "cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}]},
        "workload": {"kind": "collective", "ops": ["all_reduce", "all_gather"],
                     "algorithms": ["ring", "auto"], "sizes": {"from": "1KiB", "to": "1GiB", "factor": 4},
                     "group": {"first": 0, "count": 4, "stride": 2}, "iterations": 5,
                     "chunk_bytes": "1MiB", "torus_dims": [2, 2], "root": 0},
        "simulation": {"network_model": "analytical", "trace": false}})",
    R"({"cluster": {
          "devices": [{"name": "X", "base": "H100", "peak": {"bf16": "500TFLOPS"}},
                      {"name": "Y", "kind": "cpu", "peak": {"fp32": "1TFLOPS"}, "memory": "1TiB",
                       "memory_bandwidth": "200GB/s", "pcie_bandwidth": "32GB/s",
                       "nvlink_bandwidth": "100GB/s"}],
          "regions": [
            {"name": "a", "gateway_bandwidth": "400Gbps",
             "nodes": [{"count": 4, "device": "X", "devices_per_node": 8, "intra": "nvlink_mesh",
                        "intra_bandwidth": "300GB/s", "intra_latency": "1us", "pcie_bandwidth": "63GB/s",
                        "pcie_latency": "1us", "nics": 8, "nic_bandwidth": "400Gbps",
                        "nic_latency": "2us", "host_bandwidth": "200GB/s"}],
             "fabric": {"kind": "rail_optimized", "nodes_per_group": 2, "spines": 4,
                        "oversubscription": 2, "link_latency": "600ns"}},
            {"name": "b", "gateway_bandwidth": "400Gbps",
             "nodes": [{"count": 4, "device": "Y", "devices_per_node": 1, "intra": "pcie",
                        "nic_bandwidth": "100Gbps"}],
             "fabric": {"kind": "torus", "torus_dims": [2, 2], "torus_link_bandwidth": "50GB/s"}},
            {"name": "c", "gateway_bandwidth": "400Gbps",
             "nodes": [{"count": 4, "device": "A100-80GB", "devices_per_node": 8, "nic_bandwidth": "200Gbps"}],
             "fabric": {"kind": "thin_tree", "nodes_per_group": 2, "group_uplink": "400Gbps"}}],
          "wan": [{"between": ["a", "b"], "bandwidth": "10Gbps", "latency": "30ms"},
                  {"between": ["b", "c"], "bandwidth": "10Gbps", "latency": "30ms"}]},
        "workload": {"kind": "task_graph",
          "collectives": [{"name": "g", "op": "all_reduce", "algorithm": "ring",
                           "group": "all", "bytes": "1GiB", "chunk_bytes": "1MiB", "root": 0}],
          "tasks": [
            {"id": "f", "ranks": "all", "kind": "compute", "duration": "1ms", "stream": "s"},
            {"id": "b", "ranks": "all", "kind": "compute", "flops": "1TFLOP", "dtype": "fp32", "deps": ["f"]},
            {"id": "ar", "ranks": "all", "kind": "collective", "collective": "g", "deps": ["b"]},
            {"id": "s", "rank": 0, "kind": "send", "peer": 1, "bytes": "1MiB", "tag": 2},
            {"id": "r", "rank": 1, "kind": "recv", "peer": 0, "bytes": "1MiB", "tag": 2},
            {"id": "m1", "ranks": [0, 1], "kind": "memcpy", "direction": "h2d", "bytes": "1MiB"},
            {"id": "m2", "rank": 0, "kind": "memcpy", "direction": "peer", "peer": 2, "bytes": "1MiB"},
            {"id": "a", "rank": 0, "kind": "alloc", "bytes": "1GiB"},
            {"id": "fr", "rank": 0, "kind": "free", "bytes": "1GiB", "deps": ["a"]}]}})",
    R"({"cluster": {"nodes": [{"count": 16, "device": "V100", "devices_per_node": 8, "nic_bandwidth": "100Gbps"}],
                    "fabric": {"kind": "fat_tree", "nodes_per_leaf": 4}},
        "workload": {"kind": "collective", "ops": ["all_to_all"], "sizes": ["1MiB", "0B"], "group": [0, 3, 5]}})",
};

// Documents the schema alone must reject (the loader rejects them too).
const std::vector<std::string> kBad = {
    // unknown key
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0, "nic": 1}]},
        "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]}})",
    // bad unit
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nic_bandwidth": "40OGbps"}]},
        "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]}})",
    // key for another fabric kind
    R"({"cluster": {"nodes": [{"count": 2, "device": "H100", "devices_per_node": 8, "nic_bandwidth": "1Gbps"}],
                    "fabric": {"kind": "single_switch", "nodes_per_leaf": 2}},
        "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]}})",
    // torus without dims
    R"({"cluster": {"nodes": [{"count": 2, "device": "H100", "devices_per_node": 8, "nic_bandwidth": "1Gbps"}],
                    "fabric": {"kind": "torus"}},
        "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]}})",
    // nodes and regions together
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}], "regions": []},
        "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]}})",
    // sweep key in a task graph
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}]},
        "workload": {"kind": "task_graph", "ops": ["all_reduce"],
                     "tasks": [{"id": "a", "rank": 0, "kind": "compute", "duration": "1ms"}]}})",
    // compute with both duration and flops; send without peer
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}]},
        "workload": {"kind": "task_graph",
                     "tasks": [{"id": "a", "rank": 0, "kind": "compute", "duration": "1ms", "flops": "1"}]}})",
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}]},
        "workload": {"kind": "task_graph", "tasks": [{"id": "a", "rank": 0, "kind": "send", "bytes": "1B"}]}})",
    // rank and ranks together
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}]},
        "workload": {"kind": "task_graph",
                     "tasks": [{"id": "a", "rank": 0, "ranks": "all", "kind": "compute", "duration": "1ms"}]}})",
    // factor below 2, unknown network model
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}]},
        "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": {"from": "1B", "to": "2B", "factor": 1}}})",
    R"({"cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nics": 0}]},
        "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": ["1B"]},
        "simulation": {"network_model": "packet"}})",
};

std::vector<std::string> write_documents(const std::vector<std::string>& docs, const std::string& stem) {
  std::vector<std::string> paths;
  for (size_t i = 0; i < docs.size(); ++i) {
    paths.push_back(write_temp(stem + std::to_string(i) + ".json", docs[i]));
  }
  return paths;
}

TEST(ScenarioSchema, AgreesWithTheLoaderOnSampleDocuments) {
  for (const std::string& d : kGood) {
    EXPECT_NO_THROW(load_scenario(json::parse(d), "good.json")) << d;
  }
  for (const std::string& d : kBad) {
    EXPECT_THROW(load_scenario(json::parse(d), "bad.json"), ScenarioError) << d;
  }
  if (!have_jsonschema()) GTEST_SKIP() << "python3-jsonschema is not installed";
  const auto good = write_documents(kGood, "schema_good_");
  const CommandResult good_result = run_validator(good);
  EXPECT_EQ(good_result.status, 0) << good_result.output;
  for (const std::string& path : good) std::remove(path.c_str());
  // One run for all bad documents: the validator says "ok" only for valid ones.
  const auto bad = write_documents(kBad, "schema_bad_");
  const CommandResult bad_result = run_validator(bad);
  EXPECT_EQ(bad_result.status, 1) << bad_result.output;
  for (const std::string& path : bad) {
    EXPECT_EQ(bad_result.output.find(path + ": ok"), std::string::npos)
        << path << " should be rejected:\n" << bad_result.output;
    EXPECT_NE(bad_result.output.find(path + ": /"), std::string::npos) << bad_result.output;
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace dtsim
