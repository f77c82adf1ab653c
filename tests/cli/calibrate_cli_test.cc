// End-to-end tests of the calibration workflow: `dtsim calibrate` on this CPU, `dtsim costs
// show`, `dtsim run --costs`, and the database's errors and atomic writes.
#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

const std::string kSmall = "small-transformer-2xcpu.json";

// One database of the small transformer's kernels, measured once per test process (ctest
// runs each test in a process of its own, several at once: each has its own folder).
const fs::path& small_database() {
  static const fs::path db = [] {
    const fs::path dir = scratch("calibrate_small_" + std::to_string(getpid()));
    fs::create_directories(dir);
    const Result r = dtsim("calibrate --backend cpu --for " + example(kSmall) + " --out " +
                           (dir / "db.json").string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("kernels measured on"), std::string::npos) << r.output;
    return dir / "db.json";
  }();
  return db;
}

nlohmann::json summary_after(const std::string& args, const std::string& name) {
  const fs::path out = scratch(name);
  const Result r = dtsim("run " + args + " --no-timing --quiet --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(slurp(out / "summary.json"));
}

TEST(Calibrate, ThenRunPredictsFromMeasuredKernelsOnly) {
  const fs::path& db = small_database();
  const auto doc = nlohmann::json::parse(slurp(db));
  EXPECT_EQ(doc["format"], "dtsim-cost-database");
  EXPECT_EQ(doc["device"]["backend"], "cpu");
  EXPECT_EQ(doc["device"]["catalog_name"], "CPU");
  EXPECT_EQ(doc["device"]["threads"], 1);
  // The example puts two ranks on its node: each kernel was timed beside one co-runner,
  // where this machine has a second core.
  cpu_set_t cores;
  CPU_ZERO(&cores);
  sched_getaffinity(0, sizeof cores, &cores);
  EXPECT_EQ(doc["device"]["co_runners"], CPU_COUNT(&cores) >= 2 ? 1 : 0);
  EXPECT_GT(doc["entries"].size(), 20u);
  const auto s = summary_after(example(kSmall) + " --costs " + db.string(), "calibrate_run");
  EXPECT_EQ(s["cost_model"], "measured");
  EXPECT_EQ(s["cost_sources"]["roofline"]["ops"], 0);
  EXPECT_EQ(s["cost_sources"]["interpolated"]["ops"], 0);
  EXPECT_GT(s["cost_sources"]["measured"]["ops"].get<int>(), 0);
  // The prediction differs from the roofline's (the catalog CPU is a 64-core server).
  const auto roofline = summary_after(example(kSmall), "calibrate_run_roofline");
  EXPECT_NE(s["simulated_time_s"], roofline["simulated_time_s"]);
  // The scenario key does the same, its path relative to the scenario file.
  const fs::path dir = db.parent_path();
  fs::copy_file(example(kSmall), dir / "keyed.json", fs::copy_options::overwrite_existing);
  const auto keyed = summary_after((dir / "keyed.json").string() +
                                       " --set simulation.cost_model=measured --set "
                                       "simulation.costs=db.json",
                                   "calibrate_run_keyed");
  EXPECT_EQ(keyed["simulated_time_s"], s["simulated_time_s"]);
}

TEST(Calibrate, KernelsTheDatabaseLacksArePricedByTheRoofline) {
  // Twice the hidden size: the GEMMs and norms of the database's families at other sizes
  // (interpolated or extrapolated); with RMSNorm and SwiGLU (Llama) kernels it never
  // measured, which the roofline prices.
  const auto s = summary_after(example(kSmall) + " --costs " + small_database().string() +
                                   " --set model.preset=llama3-8b --set model.layers=2 --set "
                                   "model.hidden=512 --set model.heads=8 --set model.kv_heads=8 "
                                   "--set model.ffn_hidden=1024 --set model.vocab=8192",
                               "calibrate_llama");
  const auto& c = s["cost_sources"];
  EXPECT_GT(c["roofline"]["ops"].get<int>(), 0) << c.dump();
  EXPECT_GT(c["interpolated"]["ops"].get<int>() + c["extrapolated"]["ops"].get<int>(), 0)
      << c.dump();
}

TEST(Calibrate, CostsShowPrintsTheDeviceTheKernelsAndTheHeldOutError) {
  const Result r = dtsim("costs show " + small_database().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cost database version 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("prices \"CPU\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("OpenBLAS"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("layer_norm       backward"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("held out, median |error|"), std::string::npos) << r.output;
}

TEST(Calibrate, AnotherVersionOrDeviceIsRefusedNamingTheFileAndField) {
  const fs::path dir = scratch("calibrate_mismatch");
  fs::create_directories(dir);
  auto doc = nlohmann::json::parse(slurp(small_database()));
  doc["version"] = 7;
  std::ofstream(dir / "v7.json") << doc.dump();
  const Result v = dtsim("run " + example(kSmall) + " --costs " + (dir / "v7.json").string() +
                         " --out " + (dir / "out").string());
  EXPECT_EQ(v.exit_code, 2) << v.output;
  EXPECT_NE(v.output.find((dir / "v7.json").string() + ": /version: this dtsim reads cost "
                                                       "databases of versions 1 to 3"),
            std::string::npos)
      << v.output;
  const Result gpu = dtsim("run " + example("llama3-70b-64xH100.json") + " --costs " +
                           small_database().string() + " --out " + (dir / "out").string());
  EXPECT_EQ(gpu.exit_code, 2) << gpu.output;
  EXPECT_NE(gpu.output.find(small_database().string() + ": /device/catalog_name: measured on "
                                                        "\"CPU\""),
            std::string::npos)
      << gpu.output;
  EXPECT_NE(gpu.output.find("--costs-device"), std::string::npos) << gpu.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "summary.json"));
  // Mapped explicitly, it prices what it can (the H100's bf16 kernels are other families).
  const Result mapped = dtsim("check " + example("llama3-70b-64xH100.json") + " --costs " +
                              small_database().string() + " --costs-device H100");
  EXPECT_EQ(mapped.exit_code, 0) << mapped.output;
  const Result unknown = dtsim("check " + example(kSmall) + " --costs " +
                               small_database().string() + " --costs-device B200");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("mapped to \"B200\", but the scenario's devices are CPU"),
            std::string::npos)
      << unknown.output;
}

TEST(Calibrate, AKilledOrInterruptedCalibrationLeavesTheOldDatabaseWhole) {
  const fs::path dir = scratch("calibrate_killed");
  fs::create_directories(dir);
  fs::copy_file(small_database(), dir / "db.json");
  const std::string before = slurp(dir / "db.json");
  // SIGKILL at several points of a sweep (loading, measuring, writing): the file is always a
  // whole database, the old one or a new one.
  // Without co-runners: what is tested is the write, and they would only double the time.
  for (const char* after : {"0.05", "0.3", "0.8", "1.5", "2.5", "4"}) {
    dtsim("calibrate --co-runners 0 --for " + example(kSmall) + " --out " +
          (dir / "db.json").string());
    const Result killed =
        Result{std::system(("timeout -s KILL " + std::string(after) + " " + DTSIM_BINARY +
                            " calibrate --co-runners 0 --quiet --for " + example(kSmall) +
                            " --out " +
                            (dir / "db.json").string() + " > /dev/null 2>&1")
                               .c_str()),
               ""};
    (void)killed;
    const Result show = dtsim("costs show " + (dir / "db.json").string());
    EXPECT_EQ(show.exit_code, 0) << "killed after " << after << " s: " << show.output;
  }
  // Ctrl-C stops the sweep cleanly: exit 130 and nothing written.
  fs::copy_file(small_database(), dir / "db.json", fs::copy_options::overwrite_existing);
  const int stopped = std::system(
      ("timeout --preserve-status -s INT 0.5 " + std::string(DTSIM_BINARY) + " calibrate --for " +
       example(kSmall) + " --out " + (dir / "fresh.json").string() + " > /dev/null 2>&1")
          .c_str());
  EXPECT_EQ(WEXITSTATUS(stopped), 130);
  EXPECT_FALSE(fs::exists(dir / "fresh.json"));
  EXPECT_EQ(slurp(dir / "db.json"), before);
}

TEST(Calibrate, AGridOfOpsCarriesItsGemmNeighbours) {
  const fs::path dir = scratch("calibrate_grid");
  fs::create_directories(dir);
  std::ofstream(dir / "ops.json") << R"([
    {"name": "g", "kind": "gemm", "storage": "fp32", "math": "fp32", "gemm": [64, 64, 64, 1, 0, 1],
     "flops": 524288},
    {"name": "s", "kind": "softmax", "storage": "fp32", "math": "fp32", "rows_width": [64, 64], "bytes": 32768}])";
  const Result r = dtsim("calibrate --ops " + (dir / "ops.json").string() + " --out " +
                         (dir / "db.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto doc = nlohmann::json::parse(slurp(dir / "db.json"));
  EXPECT_EQ(doc["entries"].size(), 5u);  // the GEMM, its m + 1, n + 1, k + 1, the softmax
}

TEST(Calibrate, BadRequestsAreErrorsThatSayWhatIsExpected) {
  const fs::path dir = scratch("calibrate_bad");
  fs::create_directories(dir);
  const std::string out = " --out " + (dir / "db.json").string();
  // Without a CUDA toolkit (bad input for this build, 2) or without a GPU (1), it says which.
  const Result cuda = dtsim("calibrate --backend cuda --for " + example(kSmall) + " --out " +
                            (dir / "cuda.json").string());
  if (cuda.exit_code != 0) {
    EXPECT_TRUE(cuda.output.find("configured without a CUDA toolkit") != std::string::npos ||
                cuda.output.find("no CUDA device found") != std::string::npos)
        << cuda.output;
  }
  const Result nothing = dtsim("calibrate" + out);
  EXPECT_EQ(nothing.exit_code, 2) << nothing.output;
  EXPECT_NE(nothing.output.find("--for SCENARIO, --ops FILE or --collectives"), std::string::npos);
  const Result budget = dtsim("calibrate --budget soon --for " + example(kSmall) + out);
  EXPECT_EQ(budget.exit_code, 2) << budget.output;
  EXPECT_NE(budget.output.find("expected a positive duration such as \"10min\""),
            std::string::npos);
  std::ofstream(dir / "ops.json") << R"([{"kind": "fft"}])";
  const Result ops = dtsim("calibrate --ops " + (dir / "ops.json").string() + out);
  EXPECT_EQ(ops.exit_code, 2) << ops.output;
  EXPECT_NE(ops.output.find((dir / "ops.json").string() + ": /0: "), std::string::npos)
      << ops.output;
  const Result co = dtsim("calibrate --for " + example(kSmall) + " --co-runners 4096" + out);
  EXPECT_EQ(co.exit_code, 2) << co.output;
  EXPECT_NE(co.output.find("--co-runners"), std::string::npos) << co.output;
  EXPECT_NE(co.output.find("expected at most"), std::string::npos) << co.output;
  EXPECT_FALSE(fs::exists(dir / "db.json"));
}

}  // namespace
