// CPU quotas for slower ranks: a rank at half a core runs a busy loop about twice as long,
// a rank at a whole core gets no cgroup, and the cgroups are gone afterwards, also when
// their rank was killed. Needs root and a cpu cgroup controller (v1 or v2): skipped, with
// the reason, where either is missing.
#include "runner/cpu_quota.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace dtsim {
namespace {

// Seconds of wall time a fixed amount of integer work takes in a child process, which
// first joins rank `rank`'s cgroup under `folder` (when it has one).
double child_busy_seconds(const std::filesystem::path& folder, int rank) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    if (!folder.empty() && !join_rank_cgroup(folder, rank)) ::_exit(2);
    const auto start = std::chrono::steady_clock::now();
    volatile uint64_t x = 0;
    for (uint64_t i = 0; i < 400'000'000; ++i) x = x + i * i;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    [[maybe_unused]] const auto written = ::write(pipefd[1], &s, sizeof s);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  double s = -1;
  if (::read(pipefd[0], &s, sizeof s) != sizeof s) s = -1;
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return s;
}

TEST(CpuQuotas, AHalfShareRankRunsAboutHalfAsFastAndItsCgroupGoes) {
  if (const CpuCgroupRoot root = find_cpu_cgroup_root(); root.root.empty()) {
    GTEST_SKIP() << root.why;
  }
  std::filesystem::path folder;
  double free_s = 0, half_s = 0;
  {
    CpuQuotas quotas({1.0, 0.5});
    folder = quotas.folder();
    ASSERT_FALSE(folder.empty());
    EXPECT_FALSE(std::filesystem::exists(folder / "rank0"));  // a whole core: no quota
    ASSERT_TRUE(std::filesystem::exists(folder / "rank1"));
    free_s = child_busy_seconds(folder, 0);
    half_s = child_busy_seconds(folder, 1);
  }
  ASSERT_GT(free_s, 0);
  ASSERT_GT(half_s, 0);
  // Two within 10%: the quota's 10 ms period divides even a fraction of a second evenly.
  EXPECT_NEAR(half_s / free_s, 2.0, 0.2) << free_s << " s free, " << half_s << " s at half";
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
