// dtsim sweep past a bad point: the point's row carries its error and the others are
// produced (exit 1, stderr lists the failures); the output path is checked before any point
// runs; a key varied twice is refused; --no-timing reruns are byte-identical; a training
// scenario gets training figures as columns.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const std::string kAllReduce =
    " --set 'workload.sizes=[\"64MiB\"]' --set 'workload.algorithms=[\"ring\"]'";

TEST(CliSweep, ABadPointBecomesARowWithItsErrorAndTheOthersRun) {
  const fs::path csv = scratch("sweep_bad_point.csv");
  const Result r = dtsim("sweep " + example("allreduce-8xH100-nvswitch.json") + kAllReduce +
                         " --vary cluster.nodes.0.devices_per_node=2,zero,8 --out " + csv.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("error: point 1 (cluster.nodes.0.devices_per_node=zero): "
                          "/cluster/nodes/0/devices_per_node"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 failed"), std::string::npos) << r.output;
  const auto lines = lines_of(slurp(csv));
  ASSERT_EQ(lines.size(), 4u) << slurp(csv);
  EXPECT_EQ(lines[1].rfind("0,2,,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("1,zero,\"/cluster/nodes/0/devices_per_node: expected an integer", 0),
            0u)
      << lines[2];
  EXPECT_EQ(lines[3].rfind("2,8,,", 0), 0u) << lines[3];
}

TEST(CliSweep, EveryPointBadIsBadInput) {
  const fs::path csv = scratch("sweep_all_bad.csv");
  const Result r = dtsim("sweep " + example("allreduce-8xH100-nvswitch.json") +
                         " --vary cluster.nodes.0.count=zero,-1 --out " + csv.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(lines_of(slurp(csv)).size(), 3u);
}

TEST(CliSweep, TheOutputPathIsCheckedBeforeAnyPointRuns) {
  const Result r = dtsim("sweep " + example("allreduce-8xH100-nvswitch.json") +
                         " --vary cluster.nodes.0.count=1,2 --out /nonexistent/folder/s.csv");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write /nonexistent/folder/s.csv: No such file or directory"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("point 1/"), std::string::npos) << r.output;
  const Result folder =
      dtsim("sweep " + example("allreduce-8xH100-nvswitch.json") +
            " --vary cluster.nodes.0.count=1,2 --out " + fs::temp_directory_path().string());
  EXPECT_EQ(folder.exit_code, 1) << folder.output;
  EXPECT_NE(folder.output.find("it is a folder"), std::string::npos) << folder.output;
}

TEST(CliSweep, AKeyVariedTwiceIsRefused) {
  const Result r = dtsim("sweep " + example("allreduce-8xH100-nvswitch.json") +
                         " --vary cluster.nodes.0.count=1,2 --vary cluster.nodes.0.count=4 --out " +
                         scratch("sweep_twice.csv").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("\"cluster.nodes.0.count\" is varied twice"), std::string::npos)
      << r.output;
}

TEST(CliSweep, NoTimingRerunsAreByteIdentical) {
  const fs::path a = scratch("sweep_a.csv"), b = scratch("sweep_b.csv");
  const std::string args = "sweep " + example("allreduce-8xH100-nvswitch.json") + kAllReduce +
                           " --vary cluster.nodes.0.devices_per_node=2,4 --no-timing --out ";
  ASSERT_EQ(dtsim(args + a.string()).exit_code, 0);
  ASSERT_EQ(dtsim(args + b.string() + " --jobs 1").exit_code, 0);
  EXPECT_EQ(slurp(a), slurp(b));
  EXPECT_EQ(slurp(a).find("wall_time_s"), std::string::npos);
}

TEST(CliSweep, ATrainingScenarioGetsTrainingFiguresAsColumns) {
  const fs::path csv = scratch("sweep_training.csv");
  const Result r = dtsim("sweep " + example("small-transformer-2xcpu.json") +
                         " --vary training.micro_batch=1,2 --no-timing --out " + csv.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto lines = lines_of(slurp(csv));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "point,training.micro_batch,error,simulated_time_s,events,step_time_s,samples_per_s,"
            "tokens_per_s,mfu,peak_memory_bytes,oom_ranks");
}

}  // namespace
