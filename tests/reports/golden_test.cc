// Golden tests of the bundled training examples: each one's headline figures (step time,
// MFU, throughput, memory, OOM ranks, micro-batches, layers per stage, local/sync steps)
// against tests/golden/training_examples.json, one CTest test per example.
//
// Update mode: with DTSIM_UPDATE_GOLDEN=1 in the environment the tests compare nothing and
// rewrite each example's entry in the golden file with the current figures instead, e.g.
//   DTSIM_UPDATE_GOLDEN=1 ctest --test-dir build/release -R TrainingGolden
// Do that after an intended change to the cost model, the device catalog or the lowering,
// and review the file's diff like code. An entry's "relative_tolerance" is kept on update.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/training_summary.h"
#include "scenarios/loader.h"
#include "runner/scenario_runner.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

// 1% relative. The simulation is deterministic: one build reproduces these figures
// exactly, and the tolerance only absorbs harmless floating-point reordering (another
// compiler, optimisation level or the sanitizer build). Any real change to the model moves
// some figure by more than that; then regenerate the file (above) and review the diff.
constexpr double kDefaultTolerance = 0.01;

// Counts, compared exactly; every other figure is compared with the relative tolerance.
const std::set<std::string> kExactFigures = {"oom_ranks", "micro_batches", "stage_layers"};

// The training examples of scenarios/examples/ (CoversEveryTrainingExample keeps this
// list complete).
const std::vector<std::string> kExamples = {
    "gpt3-175b-1024xA100",     "llama3-70b-64xH100",     "resnet50-256xP100",
    "hetero-a100-v100-gpt",    "geo-2regions-llama3-8b", "classifier-100m-classes-256xV100",
    "small-transformer-2xcpu", "qwen3-30b-a3b-32xH100",  "partial-fc-2m-classes-32xA100",
};

std::string examples_dir() { return std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/"; }
std::string golden_path() {
  return std::string(DTSIM_SOURCE_DIR) + "/tests/golden/training_examples.json";
}

bool update_mode() {
  const char* v = std::getenv("DTSIM_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// The figures the golden file keeps, from the "training" section of a summary.
nlohmann::json figures_of(const nlohmann::ordered_json& t) {
  nlohmann::json f;
  f["iteration_time_s"] = t["iteration_time_s"];
  f["mfu"] = t["mfu"];
  // Sequence models are judged by tokens per second, image models by samples (one "token"
  // per sample).
  if (t["tokens_per_iteration"].get<int64_t>() > t["samples_per_iteration"].get<int64_t>()) {
    f["tokens_per_s"] = t["tokens_per_s"];
  } else {
    f["samples_per_s"] = t["samples_per_s"];
  }
  f["max_peak_memory_bytes"] = t["max_peak_memory_bytes"];
  f["oom_ranks"] = t["oom_ranks"];
  f["micro_batches"] = t["micro_batches"];
  // Layers per pipeline stage over all its chunks, as ranks[].layers counts them (the
  // embedding and the head are layers too). Balanced partitions depend on the devices'
  // speeds, so they move with the cost model.
  const int pp = t["plan"]["pp"].get<int>();
  if (pp > 1) {
    std::vector<int> layers(static_cast<size_t>(pp), -1);
    for (const auto& r : t["ranks"]) {
      int& l = layers[r["pp"].get<size_t>()];
      const int mine = r["layers"].get<int>();
      // Every rank of a stage holds the same layers; -2 would show a lowering bug.
      l = (l == -1 || l == mine) ? mine : -2;
    }
    f["stage_layers"] = layers;
  }
  if (t.contains("local_iteration_time_s")) {
    f["local_iteration_time_s"] = t["local_iteration_time_s"];
    f["sync_iteration_time_s"] = t["sync_iteration_time_s"];
  }
  return f;
}

nlohmann::json run_example(const std::string& name) {
  const auto scenario_prepared =
      test_support::prepare_file(examples_dir() + name + ".json", {"simulation.trace=false"});
  const LoweredScenario& scenario = scenario_prepared->lowered;
  if (!scenario.training) throw std::runtime_error(name + " is not a training scenario");
  const ScenarioRun run = run_scenario(scenario_prepared->scenario, scenario);
  return figures_of(make_training_summary(scenario, run));
}

nlohmann::json read_golden() {
  std::ifstream in(golden_path());
  if (!in) return nlohmann::json::object();
  return nlohmann::json::parse(in);
}

// Replaces one example's entry in the golden file. ctest runs each example in its own
// process, several at once with -j, so the read-modify-write holds an exclusive lock on
// the file (written in place, not renamed, so that every writer locks the same inode).
// Returns "" or what went wrong.
std::string write_golden_entry(const std::string& name, const nlohmann::json& figures) {
  const std::string path = golden_path();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) return "cannot open " + path + ": " + std::strerror(errno);
  std::string error;
  if (::flock(fd, LOCK_EX) != 0) {
    error = std::string("cannot lock: ") + std::strerror(errno);
  } else {
    std::string text;
    char buf[1 << 16];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    nlohmann::json doc = text.empty() ? nlohmann::json::object() : nlohmann::json::parse(text);
    doc["comment"] =
        "Expected figures of the training examples for tests/reports/golden_test.cc. "
        "Regenerate with DTSIM_UPDATE_GOLDEN=1 (see docs/training.md, Golden tests).";
    nlohmann::json& entry = doc["examples"][name];
    const double tolerance =
        entry.is_object() ? entry.value("relative_tolerance", kDefaultTolerance) : kDefaultTolerance;
    entry = {{"relative_tolerance", tolerance}, {"expected", figures}};
    // nlohmann::json sorts keys: the file does not depend on which example ran first.
    const std::string out = doc.dump(2) + "\n";
    if (::ftruncate(fd, 0) != 0) {
      error = std::string("cannot truncate: ") + std::strerror(errno);
    } else {
      size_t done = 0;
      while (done < out.size() && error.empty()) {
        const ssize_t n = ::pwrite(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
        if (n < 0) error = std::string("cannot write: ") + std::strerror(errno);
        else done += static_cast<size_t>(n);
      }
    }
  }
  ::close(fd);  // also releases the lock
  return error.empty() ? "" : path + ": " + error;
}

class TrainingGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainingGolden, Matches) {
  const std::string& name = GetParam();
  const nlohmann::json actual = run_example(name);
  if (update_mode()) {
    const std::string error = write_golden_entry(name, actual);
    ASSERT_EQ(error, "");
    std::cout << "updated " << golden_path() << " [" << name << "]\n";
    return;
  }
  const nlohmann::json golden = read_golden();
  const auto examples = golden.find("examples");
  ASSERT_TRUE(examples != golden.end() && examples->contains(name))
      << golden_path() << " has no entry for " << name
      << "; create it with DTSIM_UPDATE_GOLDEN=1 (see the header of " << __FILE__ << ")";
  const nlohmann::json& entry = (*examples)[name];
  const double tolerance = entry.value("relative_tolerance", kDefaultTolerance);
  const nlohmann::json& expected = entry["expected"];
  const std::string hint = "; if the change is intended, rerun with DTSIM_UPDATE_GOLDEN=1";
  for (const auto& [key, want] : expected.items()) {
    SCOPED_TRACE(name + ": " + key);
    ASSERT_TRUE(actual.contains(key)) << "the run no longer reports " << key << hint;
    const nlohmann::json& got = actual[key];
    if (kExactFigures.count(key) != 0) {
      EXPECT_EQ(got, want) << hint;
      continue;
    }
    const double w = want.get<double>();
    const double g = got.get<double>();
    const double rel = w != 0 ? std::abs(g - w) / std::abs(w) : std::abs(g);
    EXPECT_LE(rel, tolerance) << "expected " << w << ", got " << g << " (" << rel * 100
                              << "% off, tolerance " << tolerance * 100 << "%)" << hint;
  }
  for (const auto& [key, value] : actual.items()) {
    EXPECT_TRUE(expected.contains(key))
        << name << ": the run reports " << key << " = " << value << ", the golden file does not"
        << hint;
  }
}

// Test names may not hold '-' or '.': "gpt3-175b-1024xA100" -> "gpt3_175b_1024xA100".
std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '-' || c == '.'; }, '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(Examples, TrainingGolden, ::testing::ValuesIn(kExamples), case_name);

// A new training example must get a golden entry, and an entry must name a test case.
// Cheap: reads the JSON only (a training scenario is one with a "model" section).
TEST(TrainingGoldenFile, CoversEveryTrainingExample) {
  std::set<std::string> training;
  for (const auto& file : std::filesystem::directory_iterator(examples_dir())) {
    if (file.path().extension() != ".json") continue;
    std::ifstream in(file.path());
    if (nlohmann::json::parse(in).contains("model")) training.insert(file.path().stem().string());
  }
  const std::set<std::string> listed(kExamples.begin(), kExamples.end());
  EXPECT_EQ(listed, training) << "keep kExamples in " << __FILE__ << " equal to the training "
                              << "scenarios of scenarios/examples/";
  if (update_mode()) return;
  const nlohmann::json golden = read_golden();
  const nlohmann::json entries = golden.value("examples", nlohmann::json::object());
  for (const auto& [name, entry] : entries.items()) {
    EXPECT_TRUE(listed.count(name) != 0)
        << golden_path() << " has an entry for " << name << ", which is not a test case: remove it";
  }
}

}  // namespace
}  // namespace dtsim
