// CPU quotas for slower ranks: a rank at half a core gets half its core for a busy loop,
// a rank at a whole core gets no cgroup, the cgroups are gone afterwards, also when their
// rank was killed, and under cgroup v1 a compute thread is held to the share only between
// entering and leaving its quota. Needs root and a cpu cgroup controller (v1 or v2): skipped, with
// the reason, where either is missing.
#include "runner/cpu_quota.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace dtsim {
namespace {

// What a child process got of its core while it did a fixed amount of integer work: its
// CPU time over its wall time. The child first joins rank `rank`'s cgroup under `folder`
// (when it has one) and pins itself to the core it is on, as a rank of a real run does
// (runner/mpi/rank_main.cc). The work's own CPU time is no yardstick on these VMs: the same
// loop took 0.20 - 0.45 s of CPU from run to run, so a ratio of two runs' wall times (half
// share over whole core) came out 1.4 - 2.7, while the share of the core stayed within
// 0.50 - 0.52 at half and 0.997 - 1.000 whole.
struct CoreUse {
  double wall_s = -1;
  double cpu_s = -1;
  double share() const { return wall_s > 0 ? cpu_s / wall_s : -1; }
};

double seconds_of(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A fixed amount of integer work on the calling thread: its CPU time and its wall time.
CoreUse busy_loop(uint64_t iterations) {
  CoreUse use;
  const double wall0 = seconds_of(CLOCK_MONOTONIC), cpu0 = seconds_of(CLOCK_THREAD_CPUTIME_ID);
  volatile uint64_t x = 0;
  for (uint64_t i = 0; i < iterations; ++i) x = x + i * i;
  use.wall_s = seconds_of(CLOCK_MONOTONIC) - wall0;
  use.cpu_s = seconds_of(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  return use;
}

CoreUse child_core_use(const std::filesystem::path& folder, int rank) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    if (!folder.empty() && !join_rank_cgroup(folder, rank)) ::_exit(2);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(::sched_getcpu(), &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) ::_exit(3);
    const CoreUse use = busy_loop(400'000'000);
    [[maybe_unused]] const auto written = ::write(pipefd[1], &use, sizeof use);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  CoreUse use;
  if (::read(pipefd[0], &use, sizeof use) != sizeof use) use = {};
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return use;
}

TEST(CpuQuotas, AHalfShareRankGetsHalfItsCoreAndItsCgroupGoes) {
  if (const CpuCgroupRoot root = find_cpu_cgroup_root(); root.root.empty()) {
    GTEST_SKIP() << root.why;
  }
  std::filesystem::path folder;
  CoreUse free, half;
  {
    CpuQuotas quotas({1.0, 0.5});
    folder = quotas.folder();
    ASSERT_FALSE(folder.empty());
    EXPECT_FALSE(std::filesystem::exists(folder / "rank0"));  // a whole core: no quota
    ASSERT_TRUE(std::filesystem::exists(folder / "rank1"));
    free = child_core_use(folder, 0);
    half = child_core_use(folder, 1);
  }
  ASSERT_GT(free.wall_s, 0);
  ASSERT_GT(half.wall_s, 0);
  // A share of wall time, not a ratio of two runs' wall times: another process on the
  // core takes from both runs alike, not from one. The quota's 10 ms period divides even
  // a fraction of a second evenly, so half a core within a tenth of a core.
  EXPECT_GT(free.share(), 0.8) << free.cpu_s << " s of CPU in " << free.wall_s << " s";
  EXPECT_NEAR(half.share(), 0.5, 0.1) << half.cpu_s << " s of CPU in " << half.wall_s << " s";
  EXPECT_FALSE(std::filesystem::exists(folder));
}

TEST(CpuQuotas, AKilledRanksCgroupIsRemovedToo) {
  if (const CpuCgroupRoot root = find_cpu_cgroup_root(); root.root.empty()) {
    GTEST_SKIP() << root.why;
  }
  std::filesystem::path folder;
  {
    CpuQuotas quotas({0.25});
    folder = quotas.folder();
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (!join_rank_cgroup(folder, 0)) ::_exit(2);
      ::pause();
      ::_exit(0);
    }
    ASSERT_GT(pid, 0);
    // Until the child is in its cgroup, then kill it as a crashed rank dies.
    const auto joined = [&] {
      std::ifstream procs(folder / "rank0" / "cgroup.procs");
      std::string line;
      return static_cast<bool>(std::getline(procs, line));
    };
    for (int i = 0; i < 500 && !joined(); ++i) ::usleep(2000);
    EXPECT_TRUE(joined());
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  EXPECT_FALSE(std::filesystem::exists(folder));
}

// The calling thread's cgroup in the cpu hierarchy (v1: the line naming "cpu").
std::string thread_cpu_cgroup() {
  std::ifstream in("/proc/thread-self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if (("," + controllers + ",").find(",cpu,") != std::string::npos) return line.substr(b + 1);
  }
  return "";
}

TEST(CpuQuotas, UnderV1AComputeThreadIsHeldToItsShareOnlyWhileInside) {
  const CpuCgroupRoot root = find_cpu_cgroup_root();
  if (root.root.empty()) GTEST_SKIP() << root.why;
  if (root.v2) GTEST_SKIP() << "cgroup v2: a rank joins its quota whole";
  std::filesystem::path folder;
  struct Result {
    CoreUse inside, outside;
    char cgroup_inside[128] = {};
    char cgroup_outside[128] = {};
    bool ok = false;
  } r;
  {
    CpuQuotas quotas({1.0, 0.5});
    ASSERT_TRUE(quotas.binds_kernels());
    folder = quotas.folder();
    EXPECT_FALSE(KernelQuota(folder, 0).binds());  // a whole core: nothing to enter
    int pipefd[2];
    ASSERT_EQ(::pipe(pipefd), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipefd[0]);
      Result out;
      try {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(::sched_getcpu(), &one);
        if (::sched_setaffinity(0, sizeof one, &one) != 0) ::_exit(3);
        const KernelQuota quota(folder, 1);
        quota.enter();
        std::snprintf(out.cgroup_inside, sizeof out.cgroup_inside, "%s", thread_cpu_cgroup().c_str());
        out.inside = busy_loop(300'000'000);
        quota.leave();
        std::snprintf(out.cgroup_outside, sizeof out.cgroup_outside, "%s", thread_cpu_cgroup().c_str());
        out.outside = busy_loop(300'000'000);
        out.ok = true;
      } catch (const std::exception&) {
      }
      [[maybe_unused]] const auto written = ::write(pipefd[1], &out, sizeof out);
      ::_exit(0);
    }
    ::close(pipefd[1]);
    if (::read(pipefd[0], &r, sizeof r) != sizeof r) r = {};
    ::close(pipefd[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(r.ok);
  const std::string group = "/" + folder.filename().string();
  EXPECT_EQ(std::string(r.cgroup_inside), group + "/rank1");
  EXPECT_EQ(std::string(r.cgroup_outside), group);
  EXPECT_NEAR(r.inside.share(), 0.5, 0.1) << r.inside.cpu_s << " s of CPU in " << r.inside.wall_s;
  EXPECT_GT(r.outside.share(), 0.8) << r.outside.cpu_s << " s of CPU in " << r.outside.wall_s;
  EXPECT_FALSE(std::filesystem::exists(folder));
}

// The kernel's smallest quota is 1 ms: shares below a tenth get a longer period.
TEST(CpuQuotas, SmallSharesGetALongerPeriod) {
  EXPECT_EQ(quota_period_us(0.5), 10'000);
  EXPECT_EQ(quota_period_us(0.1), 10'000);
  EXPECT_EQ(quota_period_us(0.05), 20'000);
  EXPECT_GE(quota_period_us(0.001) * 0.001, 1000 - 1e-9);
}

TEST(CpuQuotas, WholeCoresNeedNoCgroupAndSharesOutOfRangeAreRefused) {
  const CpuQuotas none({1.0, 1.0});
  EXPECT_TRUE(none.folder().empty());
  if (find_cpu_cgroup_root().root.empty()) return;
  EXPECT_THROW(CpuQuotas({0.5, 1.5}), std::runtime_error);
  EXPECT_THROW(CpuQuotas({0.5, 0.0}), std::runtime_error);
}

}  // namespace
}  // namespace dtsim
