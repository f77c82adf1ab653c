// CPU quotas for the ranks of a real run whose devices are slower than a core (a node
// group's compute_share, a unit's speed below its catalog figures): one cgroup per such
// rank, which the rank joins before MPI starts (dtsim-rank --cgroups), removed when the run
// is over, failed or interrupted.
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
  // Removes the cgroups (their ranks must have exited); what the destructor does. A cgroup
  // that cannot be removed is named on standard error.
  void remove();

 private:
  std::filesystem::path root_;
  std::filesystem::path folder_;
  std::vector<std::filesystem::path> groups_;
};

// Moves the calling process into `folder`/rank<rank> when that cgroup exists (a rank with a
// quota); true when it did or the rank has none, false (errno set) when `folder` is not
// there to see or the write failed. Ranks in emulated network namespaces do not see it:
// the launch agent moves them (runner/emulated_network.h, DTSIM_CPU_QUOTAS).
bool join_rank_cgroup(const std::filesystem::path& folder, int rank);

}  // namespace dtsim
