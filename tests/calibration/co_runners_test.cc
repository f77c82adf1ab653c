// Co-runners: the timed kernel's copies run on the other cores, the caller's cores come
// back, too many are refused, and the sweep records how many ran; the speed reference.
#include <gtest/gtest.h>

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "calibration/calibrate.h"
#include "calibration/co_runners.h"
#include "calibration/speed_reference.h"
#include "kernels/kernel.h"

namespace dtsim::calibration {
namespace {

OpSignature small_gemm() {
  OpSignature g;
  g.name = "fc";
  g.kind = KernelKind::kGemm;
  g.storage = g.math = DType::kFp32;
  g.gemm = {64, 64, 64, 1, false, false};
  g.flops = g.gemm.flops();
  return g;
}

cpu_set_t my_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  return set;
}

double process_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// OpenBLAS's worker threads spin for a while after the library starts (about 0.1 s here)
// before they sleep: a process that has just loaded it is not idle yet.
void wait_until_quiet() {
  for (int tries = 0; tries < 40; ++tries) {
    const double cpu0 = process_cpu_s();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (process_cpu_s() - cpu0 < 0.005) return;
  }
}

TEST(CoRunners, RunTheKernelOnAnotherCoreAndGiveTheCallerItsCoresBack) {
  if (usable_cores() < 2) GTEST_SKIP() << "one core: no room for a co-runner";
  kernels::set_cpu_threads(1);  // no BLAS worker threads of its own to count
  wait_until_quiet();
  const cpu_set_t before = my_cores();
  {
    CoRunners co(1);
    EXPECT_EQ(co.count(), 1);
    // The timed kernel runs on one core, as a pinned rank does.
    const cpu_set_t pinned = my_cores();
    EXPECT_EQ(CPU_COUNT(&pinned), 1);
    co.run(small_gemm());
    // While this thread sleeps, the co-runner keeps its core busy with the kernel: the
    // process burns CPU time that this thread does not.
    const double cpu0 = process_cpu_s();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_GT(process_cpu_s() - cpu0, 0.03);
  }
  const cpu_set_t after = my_cores();
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  // Once they are gone, nothing runs.
  const double cpu0 = process_cpu_s();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LT(process_cpu_s() - cpu0, 0.03);
}

TEST(CoRunners, MoreThanTheOtherCoresAreRefused) {
  const int cores = usable_cores();
  try {
    CoRunners co(cores);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("this process may use " + std::to_string(cores)),
              std::string::npos)
        << e.what();
  }
  CoRunners none(0);
  EXPECT_EQ(none.count(), 0);
  none.run(small_gemm());  // nothing to start
}

TEST(CoRunners, TheSweepRecordsHowManyRan) {
  if (usable_cores() < 2) GTEST_SKIP() << "one core: no room for a co-runner";
  kernels::set_cpu_threads(1);
  SweepOptions options;
  options.policy.warmup = 1;
  options.policy.round = 3;
  options.policy.max_repeats = 3;
  options.co_runners = 1;
  const SweepResult r = sweep_cpu({small_gemm()}, cpu_identity("CPU"), options);
  ASSERT_EQ(r.db.entries.size(), 1u);
  EXPECT_GT(r.db.entries[0].stats.median_s, 0);
  EXPECT_EQ(r.db.device.co_runners, 1);
  // Beside co-runners each kernel is timed alone too, with as many repeats.
  EXPECT_EQ(r.db.entries[0].alone_samples_s.size(), r.db.entries[0].samples_s.size());
  EXPECT_GT(r.db.entries[0].alone.median_s, 0);
  // The machine's speed around the sweep, taken alone: a GEMM's time, well above zero.
  EXPECT_GT(r.db.device.reference_s, 1e-6);
  options.co_runners = 0;
  const SweepResult alone = sweep_cpu({small_gemm()}, cpu_identity("CPU"), options);
  EXPECT_EQ(alone.db.device.co_runners, 0);
  EXPECT_TRUE(alone.db.entries[0].alone_samples_s.empty());  // its one time is alone
}

TEST(CoRunners, PausedTheyLeaveTheOtherCoresIdleUntilTheNextKernel) {
  if (usable_cores() < 2) GTEST_SKIP() << "one core: no room for a co-runner";
  kernels::set_cpu_threads(1);
  wait_until_quiet();
  CoRunners co(1);
  co.run(small_gemm());
  co.pause();
  // Paused, the co-runner burns nothing while this thread sleeps ...
  double cpu0 = process_cpu_s();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LT(process_cpu_s() - cpu0, 0.03);
  // ... and the next kernel starts it again.
  co.run(small_gemm());
  cpu0 = process_cpu_s();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GT(process_cpu_s() - cpu0, 0.03);
  co.pause();
  co.pause();  // twice in a row: still nothing runs, and nothing waits forever
}

TEST(SpeedReference, TimesOneGemmOnOneThreadAndLeavesTheCallersThreads) {
  kernels::set_cpu_threads(std::max(usable_cores(), 1));
  const int threads = kernels::cpu_threads();
  const double t = reference_kernel_s();
  EXPECT_GT(t, 1e-6);  // 113 MFLOP: no machine does it in a microsecond
  EXPECT_LT(t, 10.0);
  EXPECT_EQ(kernels::cpu_threads(), threads);
  kernels::set_cpu_threads(1);
}

}  // namespace
}  // namespace dtsim::calibration
