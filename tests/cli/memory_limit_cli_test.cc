// A run estimated to need more memory than it may take is refused before it is lowered:
// exit 2 with the estimate, in about a second, instead of std::bad_alloc after minutes of
// lowering (a 102,400-GPU GPT-3 step did that), and nothing is written.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

const std::string kGpt3 = example("gpt3-175b-1024xA100.json");

bool has(const Result& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

TEST(CliMemoryLimit, ARunOverMaxMemoryIsRefusedWithItsEstimate) {
  const fs::path out = scratch("memory_limit_gpt3");
  const Result r = dtsim("run " + kGpt3 + " --max-memory 256MiB --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "this run needs an estimated ")) << r.output;
  EXPECT_TRUE(has(r, "the task graph of 4.69 M tasks")) << r.output;
  EXPECT_TRUE(has(r, "more than the 256MiB that --max-memory allows")) << r.output;
  EXPECT_FALSE(fs::exists(out)) << "a refused run leaves no folder it made";
  // The same run within a limit above its estimate goes ahead (its own limit: global
  // options may follow the subcommand or precede it).
  EXPECT_EQ(dtsim("--max-memory 64GiB check " + kGpt3).exit_code, 0);
}

TEST(CliMemoryLimit, The102400GpuStepIsRefusedBeforeItIsLowered) {
  // The case: 12,800 nodes of 8 A100s, one micro-batch per replica and stage. Its
  // estimate (40.8 M tasks, NCCL's buffers' allocations among them) is made from 128 of its
  // ranks: about 2.9 GiB, nearly all of it the runtime's state per task, since the graph
  // stores the ranks that run alike once.
  const std::string sets = " --set cluster.nodes.0.count=12800 --set training.global_batch=12800";
  const Result r = dtsim("run " + kGpt3 + sets + " --max-memory 2GiB --out " +
                         scratch("memory_limit_102400").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "the task graph of 40.8 M tasks")) << r.output;
  EXPECT_TRUE(has(r, "that --max-memory allows")) << r.output;
  EXPECT_FALSE(has(r, "bad_alloc")) << r.output;
}

// Without --max-memory, the limit is what the machine has available (and the memory
// cgroup's room): a 131,072-GPU step at layer granularity needs about 213 GB.
TEST(CliMemoryLimit, WithoutALimitTheMachinesAvailableMemoryIsTheLimit) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  long long kib = 0;
  while (meminfo >> key >> kib && key != "MemAvailable:") meminfo.ignore(256, '\n');
  if (kib > (200LL << 20)) GTEST_SKIP() << "this machine has more than 200 GiB available";
  const std::string sets =
      " --set cluster.nodes.0.count=16384 --set training.global_batch=131072"
      " --set simulation.granularity=layer";
  const Result r =
      dtsim("run " + kGpt3 + sets + " --out " + scratch("memory_limit_131072").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r, "this machine has available")) << r.output;
  EXPECT_TRUE(has(r, "--max-memory sets the limit")) << r.output;
}

TEST(CliMemoryLimit, CheckSaysWhatARunWouldNeed) {
  const Result r = dtsim("check " + example("llama3-70b-64xH100.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r, "memory: dtsim run needs an estimated ")) << r.output;
  EXPECT_TRUE(has(r, "lowering's working set")) << r.output;
}

TEST(CliMemoryLimit, ASweepPointOverTheLimitIsAnErrorRow) {
  const fs::path out = scratch("memory_limit_sweep");
  fs::create_directories(out);
  // 128 GPUs: 16 micro-batches fit in 600 MiB, 4,096 do not. The estimate counts what the
  // process holds after its sample lowering: about 31 MiB for the small point in a release
  // build but 300 MiB under AddressSanitizer (its shadow and quarantine are resident), while
  // the large point's graph and runtime alone are 758 MiB in any build.
  const Result r = dtsim("--max-memory 600MiB sweep " + kGpt3 +
                         " --set cluster.nodes.0.count=16 --vary training.global_batch=16,4096"
                         " --no-timing --out " +
                         (out / "sweep.csv").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string csv = slurp(out / "sweep.csv");
  EXPECT_TRUE(csv.find("\n0,16,,") != std::string::npos) << "the point that fits has no error\n"
                                                         << csv;
  EXPECT_TRUE(csv.find("\n1,4096,") != std::string::npos) << csv;
  EXPECT_TRUE(csv.find("this run needs an estimated") != std::string::npos) << csv;
}

}  // namespace
