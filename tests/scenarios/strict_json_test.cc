// Input edge cases the loader once got wrong: a number beyond a double's range (was exit 1
// with the library's raw text), a key written twice (the last one silently won), a huge
// file (read whole into memory), a device without a size (read without end), deep
// nesting, a top-level non-object, a missing model, a global batch that overflowed the
// micro-batch count (printed a negative count, then std::bad_alloc), long values echoed
// whole.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/json_document.h"
#include "scenarios/loader.h"
#include "scenarios/lowered_graph_reader.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<std::string> file_errors(const std::string& name, const std::string& text) {
  const std::string path = write_temp(name, text);
  try {
    load_scenario_file(path);
  } catch (const ScenarioError& e) {
    return e.messages();
  }
  return {};
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

constexpr const char* kSmall = R"({
  "cluster": {"nodes": [{"count": 1, "device": "H100", "devices_per_node": 8, "nic_bandwidth": "400Gbps"}],
              "fabric": {"kind": "single_switch"}},
  "model": {"family": "gpt", "layers": 2, "hidden": 256, "heads": 8, "vocab": 1000, "seq_len": 64},
  "training": {"global_batch": GLOBAL, "micro_batch": 1},
  "parallelism": {"dp": 8}
})";

std::string small_with_global(const std::string& global) {
  std::string text = kSmall;
  text.replace(text.find("GLOBAL"), 6, global);
  return text;
}

TEST(StrictJson, ANumberBeyondADoubleIsBadInputAtItsLineAndColumn) {
  const auto e = file_errors("overflow.json", small_with_global("1e999"));
  ASSERT_EQ(e.size(), 1u) << joined(e);
  EXPECT_NE(e[0].find("overflow.json: invalid JSON at line 5, column 32: the number 1e999 is "
                      "beyond the range of a double"),
            std::string::npos)
      << e[0];
}

TEST(StrictJson, AKeyWrittenTwiceIsAnErrorNamingBothValues) {
  std::string text = small_with_global("64");
  text.replace(text.find("\"micro_batch\": 1"), 16, "\"micro_batch\": 1, \"micro_batch\": 2");
  const auto e = file_errors("twice.json", small_with_global("64"));
  EXPECT_TRUE(e.empty()) << joined(e);
  const auto twice = file_errors("twice.json", text);
  ASSERT_EQ(twice.size(), 1u) << joined(twice);
  EXPECT_NE(twice[0].find("twice.json: /training/micro_batch: the key \"micro_batch\" is written "
                          "twice in one object (first number 1, then number 2)"),
            std::string::npos)
      << twice[0];
}

TEST(StrictJson, EveryDuplicateIsReportedAndArraysGetTheirIndex) {
  std::vector<InputProblem> problems;
  const auto doc = parse_json_strictly(
      R"({"a": [{"x": 1}, {"y": 1, "y": {"z": 0}}], "b": true, "b": false})", problems);
  EXPECT_FALSE(doc);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].pointer, "/a/1/y");
  EXPECT_NE(problems[0].message.find("(first number 1, then an object)"), std::string::npos)
      << problems[0].message;
  EXPECT_EQ(problems[1].pointer, "/b");
}

TEST(StrictJson, AValidDocumentReadsAsNlohmannReadsIt) {
  const std::string text =
      R"({"n": -3, "u": 18446744073709551615, "f": 2.5e-3, "s": "\u00e9", "a": [[], {}], "z": null})";
  std::vector<InputProblem> problems;
  const auto doc = parse_json_strictly(text, problems);
  ASSERT_TRUE(doc);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(*doc, nlohmann::json::parse(text));
}

TEST(StrictJson, DeepNestingIsRefusedNotRecursedInto) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::vector<InputProblem> problems;
  EXPECT_FALSE(parse_json_strictly(deep, problems));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("nested deeper than 256 levels"), std::string::npos)
      << problems[0].message;
}

TEST(StrictJson, AFileBeyondTheSizeLimitIsRefusedBeforeItIsRead) {
  const std::string path = write_temp("big.json", small_with_global("64"));
  const uint64_t before = max_input_bytes();
  set_max_input_bytes(100);
  std::vector<std::string> e;
  try {
    load_scenario_file(path);
  } catch (const ScenarioError& error) {
    e = error.messages();
  }
  set_max_input_bytes(before);
  ASSERT_EQ(e.size(), 1u) << joined(e);
  EXPECT_NE(e[0].find("more than the limit of 100 (raise it with dtsim --max-input-size)"),
            std::string::npos)
      << e[0];
  EXPECT_NO_THROW(load_scenario_file(path));
}

// A device or a pipe has no size to check first: reading /dev/zero once grew the buffer
// until std::bad_alloc, and a graph_file naming it read one endless line.
TEST(StrictJson, AnInputWithoutASizeStopsAtTheLimit) {
  const uint64_t before = max_input_bytes();
  set_max_input_bytes(1 << 20);
  std::string error;
  const std::optional<std::string> text = read_input_file("/dev/zero", error);
  std::vector<std::string> e;
  try {
    load_scenario_file("/dev/zero");
  } catch (const ScenarioError& problem) {
    e = problem.messages();
  }
  set_max_input_bytes(before);
  EXPECT_FALSE(text);
  EXPECT_NE(error.find("more than the limit of 1048576 bytes"), std::string::npos) << error;
  ASSERT_EQ(e.size(), 1u) << joined(e);
  EXPECT_NE(e[0].find("/dev/zero"), std::string::npos) << e[0];
}

TEST(StrictJson, ATopLevelNonObjectNamesTheRoot) {
  const auto e = file_errors("array.json", "[1, 2]");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("array.json: /: the document must be an object, got an array"),
            std::string::npos)
      << e[0];
}

TEST(StrictJson, AMissingModelNamesItsPointer) {
  std::string text = small_with_global("64");
  const size_t from = text.find("  \"model\"");
  text.erase(from, text.find('\n', from) - from + 1);
  const auto e = file_errors("no_model.json", text);
  EXPECT_NE(joined(e).find("no_model.json: /model: missing: a training scenario needs \"model\""),
            std::string::npos)
      << joined(e);
}

TEST(StrictJson, AGlobalBatchBeyondTheMicroBatchCountIsARangeErrorAtItsPointer) {
  try {
    test_support::prepare(nlohmann::json::parse(small_with_global("1000000000000000000")),
                          "t.json");
    FAIL() << "lowered";
  } catch (const ScenarioError& e) {
    ASSERT_EQ(e.messages().size(), 1u);
    EXPECT_NE(e.messages()[0].find("t.json: /training/global_batch: 1000000000000000000 samples "
                                   "make 125000000000000000 micro-batches per replica, more "
                                   "than the 2147483647"),
              std::string::npos)
        << e.messages()[0];
  }
}

TEST(StrictJson, ALongValueIsCutWhereItIsEchoed) {
  std::string text = small_with_global("64");
  text.replace(text.find("\"H100\""), 6, "\"" + std::string(5000, 'H') + "\"");
  const auto e = file_errors("long.json", text);
  ASSERT_FALSE(e.empty());
  for (const std::string& m : e) EXPECT_LT(m.size(), 400u) << m.substr(0, 400);
  EXPECT_NE(joined(e).find("(5000 characters)"), std::string::npos) << joined(e).substr(0, 800);
}

TEST(StrictJson, ALoweredGraphLineWithADuplicateKeyNamesTheLine) {
  std::istringstream in("{\"format\": \"x\", \"format\": \"y\"}\n");
  std::string error;
  EXPECT_FALSE(read_lowered_graph(in, 1, error));
  EXPECT_NE(error.find("line 1: /format: the key \"format\" is written twice"), std::string::npos)
      << error;
}

// The fuzzer's first lowered-graph crash: TaskGraph::add's std::invalid_argument for an
// op list on a collective task escaped the reader.
TEST(StrictJson, ALoweredGraphTaskTheGraphRefusesNamesItsLine) {
  std::ifstream in(std::string(DTSIM_SOURCE_DIR) +
                   "/tests/fuzz/regressions/lowered_graph/op-list-on-a-collective.tasks.jsonl");
  ASSERT_TRUE(in);
  std::string error;
  EXPECT_FALSE(read_lowered_graph(in, 16, error));
  EXPECT_EQ(error, "line 12: task \"ar3\": op list 0 on a task that runs no kernels");
}

}  // namespace
}  // namespace dtsim
