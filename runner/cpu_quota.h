// CPU quotas for the ranks of a real run whose devices are slower than a core (a node
// group's compute_share, a unit's speed below its catalog figures): one cgroup per such
// rank, removed when the run is over, failed or interrupted. Under cgroup v1 only the
// thread running a compute task's kernels is in it, while it runs them (KernelQuota): a
// slower device computes slower, and its communication keeps the core's pace. Under v2,
// where a cgroup takes single threads only in threaded mode, the whole rank joins it
// before MPI starts (dtsim-rank --cgroups).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dtsim {

// Which cgroup interface this machine mounts for the cpu controller, and where: v1's
// cpu.cfs_quota_us (a "cpu" hierarchy), or v2's cpu.max (the unified hierarchy). Empty
// `root` when neither is there or writable, with `why` saying what is missing.
struct CpuCgroupRoot {
  std::filesystem::path root;
  bool v2 = false;
  std::string why;
};
CpuCgroupRoot find_cpu_cgroup_root();

// The quota's period: 10 ms. Under a 100 ms period (the kernel's default) a rank at half
// share runs unthrottled for 50 ms at a time, so a kernel of tens of milliseconds would see
// its core whole; at 10 ms a busy loop measured 1.92-1.96x slower at share 0.5 (0.11 and
// 0.37 s of work).
inline constexpr int kQuotaPeriodMicroseconds = 10'000;
// The period for `share`: 10 ms, longer below a share of 0.1 (the kernel refuses quotas
// under 1 ms).
int64_t quota_period_us(double share);

class CpuQuotas {
 public:
  // shares[r]: rank r's share of a core, in (0, 1]; ranks at 1 get no cgroup. Throws
  // std::runtime_error naming the path when a quota cannot be set (no cpu controller, not
  // root), before anything runs; nothing is left behind then.
  explicit CpuQuotas(const std::vector<double>& shares);
  ~CpuQuotas();
  CpuQuotas(const CpuQuotas&) = delete;
  CpuQuotas& operator=(const CpuQuotas&) = delete;

  // The folder whose "rank<r>" cgroups the ranks join; empty when no rank has a quota.
  const std::filesystem::path& folder() const { return folder_; }
  // cgroup v1: a rank's compute threads move in and out (KernelQuota); v2: the rank joins.
  bool binds_kernels() const { return !v2_; }
  // Removes the cgroups (their ranks must have exited); what the destructor does. A cgroup
  // that cannot be removed is named on standard error.
  void remove();

 private:
  std::filesystem::path root_;
  std::filesystem::path folder_;
  std::vector<std::filesystem::path> groups_;
  bool v2_ = false;
};

// In a rank under cgroup v1: moves the calling thread into the rank's quota (enter) and
// back to the run's folder, which has none (leave). Each is one write of the thread's id
// to a cgroup's `tasks` file, opened once.
class KernelQuota {
 public:
  // `folder` as CpuQuotas::folder() names it, or reached through /proc/PID/root from a
  // network namespace whose own sysfs hides it. Nothing to bind (no "rank<r>" cgroup: a
  // rank at full speed) leaves enter() and leave() doing nothing. Throws
  // std::runtime_error naming the file that cannot be opened.
  KernelQuota(const std::filesystem::path& folder, int rank);
  ~KernelQuota();
  KernelQuota(const KernelQuota&) = delete;
  KernelQuota& operator=(const KernelQuota&) = delete;

  bool binds() const { return quota_fd_ >= 0; }
  // Throw std::runtime_error when the write is refused.
  void enter() const;
  void leave() const;

 private:
  int quota_fd_ = -1;
  int free_fd_ = -1;
};

// Moves the calling process into `folder`/rank<rank> when that cgroup exists (a rank with a
// quota); true when it did or the rank has none, false (errno set) when `folder` is not
// there to see or the write failed. Ranks in emulated network namespaces do not see it:
// the launch agent moves them (runner/emulated_network.h, DTSIM_CPU_QUOTAS).
bool join_rank_cgroup(const std::filesystem::path& folder, int rank);

}  // namespace dtsim
