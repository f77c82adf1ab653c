// The MPI probe for real: mpirun launches it on two ranks, every collective comes back with
// its samples and a fit, and a probe that fails, hangs or is asked for too many ranks ends
// with a clear error and leaves no process behind.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stop_token>
#include <thread>

#include "calibration/child_process.h"
#include "calibration/collective_probe.h"

namespace dtsim::calibration {
namespace {

CollectiveProbeOptions small_probe() {
  CollectiveProbeOptions o;
  o.probe = DTSIM_PROBE;
  o.ranks = 2;
  o.max_bytes = KiB(256);
  o.policy.round = 3;
  o.policy.max_repeats = 9;
  o.deadline = std::chrono::minutes(2);
  return o;
}

TEST(CollectiveProbe, MeasuresEveryCollectiveOnTwoRanksAndFitsTheLink) {
  const LinkCalibration l = measure_collectives(small_probe());
  EXPECT_EQ(l.ranks, 2);
  EXPECT_EQ(l.link_class, "intra_node");
  EXPECT_NE(l.library.find("MPI"), std::string::npos) << l.library;
  ASSERT_EQ(l.collectives.size(), 6u);
  for (const CollectiveMeasurement& c : l.collectives) {
    ASSERT_EQ(c.points.size(), 7u) << collective_op_name(c.op);  // 4, 8, ... 256 KiB
    EXPECT_EQ(c.points.front().bytes, KiB(4));
    EXPECT_EQ(c.points.back().bytes, KiB(256));
    for (const CollectivePoint& p : c.points) {
      EXPECT_GE(p.samples_s.size(), 3u);
      EXPECT_GT(p.stats.median_s, 0);
      EXPECT_LT(p.stats.median_s, 0.1);  // a 256 KiB call over shared memory
    }
    // 64 times the bytes cannot be faster.
    EXPECT_GT(c.points.back().stats.median_s, c.points.front().stats.median_s)
        << collective_op_name(c.op);
  }
  EXPECT_GT(l.fit.bandwidth.bytes_per_second(), 1e8);
  EXPECT_GE(l.fit.base.count_ns(), 0);
}

TEST(CollectiveProbe, MoreRanksThanCoresIsRefused) {
  CollectiveProbeOptions o = small_probe();
  o.ranks = 1000;
  try {
    measure_collectives(o);
    FAIL() << "1000 ranks were accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--ranks 1000: this process may use"), std::string::npos)
        << e.what();
  }
}

TEST(CollectiveProbe, AProbeThatFailsSaysHowAndShowsItsOutput) {
  CollectiveProbeOptions o = small_probe();
  o.factor = 1;  // the probe refuses a factor below 2
  try {
    measure_collectives(o);
    FAIL() << "a failing probe passed";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mpirun (dtsim-comm-probe) exited with status"), std::string::npos) << what;
    EXPECT_NE(what.find("factor"), std::string::npos) << what;
  }
}

// The processes whose command line names `needle`, other than this test.
int processes_named(const std::string& needle) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(needle) != std::string::npos) ++n;
  }
  return n;
}

TEST(ChildProcess, ADeadlineEndsTheWholeGroup) {
  // A shell that starts a sleeping grandchild: both are in the group and both must go.
  const std::filesystem::path log = std::filesystem::temp_directory_path() / "dtsim_child.log";
  const auto t0 = std::chrono::steady_clock::now();
  const ChildResult r = run_child({"sh", "-c", "sleep 37.5 & sleep 37.5"}, {}, log,
                                  std::chrono::milliseconds(300), {});
  EXPECT_EQ(r.end, ChildResult::End::kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(processes_named("37.5"), 0);
  EXPECT_NE(describe_failure("sh", r).find("did not finish before its deadline"),
            std::string::npos);
  std::filesystem::remove(log);
}

TEST(ChildProcess, AStopEndsItAndTheEnvironmentReachesIt) {
  const std::filesystem::path log = std::filesystem::temp_directory_path() / "dtsim_child2.log";
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  const ChildResult r =
      run_child({"sh", "-c", "echo value=$DTSIM_CHILD_TEST; sleep 38.5"}, {"DTSIM_CHILD_TEST=42"},
                log, std::chrono::seconds(30), stop.get_token());
  EXPECT_EQ(r.end, ChildResult::End::kStopped);
  EXPECT_NE(r.output.find("value=42"), std::string::npos) << r.output;
  EXPECT_EQ(processes_named("38.5"), 0);
  const ChildResult missing =
      run_child({"dtsim-no-such-program"}, {}, log, std::chrono::seconds(5), {});
  EXPECT_EQ(missing.end, ChildResult::End::kExited);
  EXPECT_EQ(missing.exit_code, 127);
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace dtsim::calibration
