// CpuQuotas: a cgroup per slowed rank, v1 (cpu.cfs_period_us, cpu.cfs_quota_us) or v2
// (cpu.max), whichever this machine mounts.
#include "runner/cpu_quota.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace dtsim {

namespace {

namespace fs = std::filesystem;

// Writes `text` to a cgroup file; a cgroup file reports a refused value on the write.
void write_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  out.flush();
  if (!out) {
    throw std::runtime_error("cannot write \"" + text + "\" to " + file.string() + ": " +
                             std::strerror(errno));
  }
}

bool writable(const fs::path& p) { return ::access(p.c_str(), W_OK) == 0; }

}  // namespace

CpuCgroupRoot find_cpu_cgroup_root() {
  CpuCgroupRoot r;
  // v1: a hierarchy with the cpu controller (cpu, or cpu,cpuacct co-mounted).
  for (const char* v1 : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
    if (fs::exists(fs::path(v1) / "cpu.cfs_quota_us")) {
      r.root = v1;
      break;
    }
  }
  // v2: the unified hierarchy, where the root's children may get the cpu controller.
  if (r.root.empty() && fs::exists("/sys/fs/cgroup/cgroup.controllers")) {
    std::ifstream in("/sys/fs/cgroup/cgroup.controllers");
    bool cpu = false;
    for (std::string word; in >> word;) cpu = cpu || word == "cpu";  // not "cpuset"
    if (!cpu) {
      r.why = "the unified cgroup hierarchy (v2) has no cpu controller";
      return r;
    }
    r.root = "/sys/fs/cgroup";
    r.v2 = true;
  }
  if (r.root.empty()) {
    r.why =
        "no cgroup hierarchy with the cpu controller is mounted (v1 /sys/fs/cgroup/cpu or "
        "v2 /sys/fs/cgroup)";
  } else if (!writable(r.root)) {
    r.why = r.root.string() + " is not writable (CPU quotas need root)";
    r.root.clear();
  }
  return r;
}

CpuQuotas::CpuQuotas(const std::vector<double>& shares) {
  bool any = false;
  for (double s : shares) any = any || s < 1;
  if (!any) return;
  const CpuCgroupRoot root = find_cpu_cgroup_root();
  if (root.root.empty()) throw std::runtime_error("CPU quotas for slower ranks: " + root.why);
  root_ = root.root;
  v2_ = root.v2;
  folder_ = root.root / ("dtsim-" + std::to_string(::getpid()));
  try {
    if (root.v2) write_file(root.root / "cgroup.subtree_control", "+cpu");
    fs::create_directory(folder_);
    groups_.push_back(folder_);
    if (root.v2) write_file(folder_ / "cgroup.subtree_control", "+cpu");
    for (size_t r = 0; r < shares.size(); ++r) {
      if (!(shares[r] > 0 && shares[r] <= 1)) {
        throw std::runtime_error("rank " + std::to_string(r) + "'s share of a core is " +
                                 std::to_string(shares[r]) + "; a quota needs one in (0, 1]");
      }
      if (shares[r] >= 1) continue;
      const fs::path group = folder_ / ("rank" + std::to_string(r));
      fs::create_directory(group);
      groups_.push_back(group);
      const int64_t period = quota_period_us(shares[r]);
      const auto quota = std::lround(shares[r] * static_cast<double>(period));
      if (root.v2) {
        write_file(group / "cpu.max", std::to_string(quota) + " " + std::to_string(period));
      } else {
        write_file(group / "cpu.cfs_period_us", std::to_string(period));
        write_file(group / "cpu.cfs_quota_us", std::to_string(quota));
      }
    }
  } catch (const std::exception& e) {
    remove();
    throw std::runtime_error(std::string("CPU quotas for slower ranks: ") + e.what());
  } catch (...) {
    remove();
    throw;
  }
}

CpuQuotas::~CpuQuotas() { remove(); }

void CpuQuotas::remove() {
  // Children before their parent; a cgroup is removed with rmdir once no process is in it,
  // and a rank that has just exited may still be counted for a moment. A process still in
  // one after that (a daemon that outlived the run) is moved to the root so the group goes.
  for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
    const auto gone = [&] { return ::rmdir(it->c_str()) == 0 || errno == ENOENT; };
    bool removed = gone();
    for (int attempt = 0; !removed && errno == EBUSY && attempt < 200; ++attempt) {
      ::usleep(10'000);
      removed = gone();
    }
    if (!removed) {
      std::ifstream procs(*it / "cgroup.procs");
      for (std::string pid; std::getline(procs, pid);) {
        std::ofstream(root_ / "cgroup.procs") << pid << std::flush;
      }
      removed = gone();
    }
    if (!removed) {
      std::fprintf(stderr, "dtsim: could not remove the CPU quota cgroup %s: %s\n", it->c_str(),
                   std::strerror(errno));
    }
  }
  groups_.clear();
}

int64_t quota_period_us(double share) {
  // The kernel's smallest quota is 1 ms: a share below a tenth gets a longer period.
  return std::max<int64_t>(kQuotaPeriodMicroseconds,
                           static_cast<int64_t>(std::ceil(1000.0 / share)));
}

namespace {

int open_tasks(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("cannot open the cgroup file " + file.string() + ": " +
                             std::strerror(errno));
  }
  return fd;
}

void move_thread(int fd, const char* where) {
  const std::string tid = std::to_string(::gettid());
  if (::write(fd, tid.data(), tid.size()) != static_cast<ssize_t>(tid.size())) {
    throw std::runtime_error(std::string("cannot move a compute thread ") + where +
                             " its CPU quota: " + std::strerror(errno));
  }
}

}  // namespace

KernelQuota::KernelQuota(const fs::path& folder, int rank) {
  const fs::path group = folder / ("rank" + std::to_string(rank));
  if (!fs::is_directory(folder)) {
    throw std::runtime_error("the CPU quotas' cgroup folder " + folder.string() +
                             " is not there to see");
  }
  if (!fs::exists(group)) return;
  quota_fd_ = open_tasks(group / "tasks");
  try {
    free_fd_ = open_tasks(folder / "tasks");
  } catch (...) {
    ::close(quota_fd_);
    quota_fd_ = -1;
    throw;
  }
}

KernelQuota::~KernelQuota() {
  if (quota_fd_ >= 0) ::close(quota_fd_);
  if (free_fd_ >= 0) ::close(free_fd_);
}

void KernelQuota::enter() const {
  if (quota_fd_ >= 0) move_thread(quota_fd_, "into");
}

void KernelQuota::leave() const {
  if (free_fd_ >= 0) move_thread(free_fd_, "out of");
}

bool join_rank_cgroup(const fs::path& folder, int rank) {
  // A folder this process cannot see (another mount namespace) is a failure, not a rank
  // without a quota.
  if (!fs::is_directory(folder)) {
    errno = ENOENT;
    return false;
  }
  const fs::path group = folder / ("rank" + std::to_string(rank));
  if (!fs::exists(group)) return true;
  std::ofstream out(group / "cgroup.procs");
  out << ::getpid();
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace dtsim
