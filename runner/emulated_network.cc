// EmulatedNetwork: ip netns, veth, TUN via dtsim-link-emulator, tc tbf; undone in reverse.
#include "runner/emulated_network.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "calibration/child_process.h"
#include "sim/router.h"

namespace dtsim {

namespace {

// Runs an `ip` or `tc` command; throws with its output when it fails.
void run(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  const calibration::ChildResult r =
      calibration::run_child(argv, {}, log, std::chrono::seconds(20), {});
  if (r.end != calibration::ChildResult::End::kExited || r.exit_code != 0) {
    std::string command;
    for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
    throw std::runtime_error(calibration::describe_failure(command, r));
  }
}

// Best effort: undoing must go on past a step that fails.
void run_quietly(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  try {
    run(argv, log);
  } catch (const std::exception&) {
  }
}

std::string control_device(const std::string& prefix, int rank) {
  // Interface names hold at most 15 characters: the prefix's number, then the rank.
  return fmt::format("dt{}c{}", prefix.substr(prefix.find('-') + 1, 7), rank);
}

// The emulated devices' MTU: the bytes the path sends in a millisecond, from 1,500 to
// 64,000 (a TUN device takes up to 65,535). The delay line moves one packet per read and
// write, with a lock and a wake-up between them, and on the 2-core development VM it carried
// about 0.6 Gbit/s of 1,500-byte packets: a 22 MB all-reduce over a 10 Gbit/s path took
// 320 ms instead of 18 ms. Larger packets are fewer for the same bytes; held to a
// millisecond of the path's time, a packet still leaves the rate and the delay to tbf and
// the line at that grain (a 100 Mbit/s path gets 12,500 bytes, a 10 Mbit/s one 1,500).
int emulated_mtu(double bytes_per_s) {
  if (!std::isfinite(bytes_per_s)) return 64'000;
  return static_cast<int>(std::clamp(bytes_per_s * 1e-3, 1500.0, 64'000.0));
}

// tbf's bucket: 10 ms at the link's rate, at least two full packets, so that the shaper
// reaches its rate (a bucket of one packet measured 80 of 100 Mbit/s) and never holds a
// packet larger than itself (which tbf drops).
int64_t bucket_bytes(double bytes_per_s) {
  return std::clamp<int64_t>(static_cast<int64_t>(bytes_per_s * 0.01),
                             2 * int64_t{emulated_mtu(bytes_per_s)}, 64 << 20);
}

// Above this a user-space delay line cannot keep up anyway; such a path (a node's NVLink
// between two ranks of a multi-node case) is left unshaped, which the log says.
constexpr double kMaxShapedBytesPerS = 10e9 / 8;

// A path of at most this latency is a veth pair: the kernel forwards its packets (a veth
// adds tens of microseconds of its own, which no delay line here could resolve below), and
// it carries what tbf lets through, where the user-space delay line carried 0.4 - 1.4
// Gbit/s beside two ranks (a 22 MB all-reduce's bytes over the time it took, 2026-12-05
// and -06). Longer paths go through the delay line.
constexpr double kVethLatencyS = 100e-6;

std::atomic<int> networks_made{0};

void wait_until_up(const std::string& device) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    std::string state;
    std::ifstream("/sys/class/net/" + device + "/operstate") >> state;
    if (state == "up") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("the control link " + device + " did not come up within 10 s");
}

}  // namespace

std::vector<EmulatedPath> emulated_paths(const Cluster& cluster, int ranks) {
  Router router(cluster.topology);
  std::vector<EmulatedPath> paths;
  for (int a = 0; a < ranks; ++a) {
    for (int b = a + 1; b < ranks; ++b) {
      EmulatedPath p;
      p.a = a;
      p.b = b;
      const auto route = router.route(cluster.devices.at(static_cast<size_t>(a)).vertex,
                                      cluster.devices.at(static_cast<size_t>(b)).vertex);
      p.bytes_per_s = route.empty() ? 0 : INFINITY;
      for (LinkId l : route) {
        const LinkInfo& link = cluster.topology.link(l);
        p.bytes_per_s = std::min(p.bytes_per_s, link.bandwidth.bytes_per_second());
        p.latency_s += link.latency.seconds();
      }
      paths.push_back(p);
    }
  }
  return paths;
}

std::string emulation_unavailable_reason() {
  if (::geteuid() != 0) return "emulated links need root (network namespaces, TUN devices, tc)";
  if (::access("/dev/net/tun", R_OK | W_OK) != 0) return "/dev/net/tun is missing";
  for (const char* tool : {"ip", "tc"}) {
    bool found = false;
    for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
      found = found || ::access((std::string(dir) + "/" + tool).c_str(), X_OK) == 0;
    }
    if (!found) return std::string("`") + tool + "` (iproute2) is not installed";
  }
  return "";
}

EmulatedNetwork::EmulatedNetwork(int ranks, const std::vector<EmulatedPath>& paths,
                                 const std::filesystem::path& emulator,
                                 const std::filesystem::path& folder)
    : ranks_(ranks),
      prefix_(fmt::format("dtsim-{}-{}", ::getpid(), networks_made++)),
      folder_(folder) {
  if (const std::string why = emulation_unavailable_reason(); !why.empty()) {
    throw std::runtime_error("--emulate-links: " + why);
  }
  std::filesystem::create_directories(folder_);
  const auto log = folder_ / "network.log";
  made_ = true;
  try {
    for (int r = 0; r < ranks_; ++r) {
      const std::string ns = namespace_of(r);
      const std::string host = control_device(prefix_, r);
      run({"ip", "netns", "add", ns}, log);
      run({"ip", "-n", ns, "link", "set", "lo", "up"}, log);
      // The control veth: mpirun (here) and its daemon in the namespace talk over it.
      run({"ip", "link", "add", host, "type", "veth", "peer", "name", "ctl", "netns", ns}, log);
      run({"ip", "addr", "add", fmt::format("10.78.{}.1/30", r), "dev", host}, log);
      run({"ip", "link", "set", host, "up"}, log);
      run({"ip", "-n", ns, "addr", "add", fmt::format("10.78.{}.2/30", r), "dev", "ctl"}, log);
      run({"ip", "-n", ns, "link", "set", "ctl", "up"}, log);
      // mpirun offers its daemons every address it has on the control veths; without a route
      // to the others, 2 of about 12 launches hung until their time-out (6 of 6 ran with it,
      // and launched faster).
      run({"ip", "-n", ns, "route", "add", "default", "via", fmt::format("10.78.{}.1", r)}, log);
    }
    // A veth carries nothing until both ends are up, which the kernel settles after `ip link
    // set up` returns: mpirun's daemons, started at once, must find it up.
    for (int r = 0; r < ranks_; ++r) wait_until_up(control_device(prefix_, r));
    // The paths' devices: a veth pair for a short path, TUN devices made by the emulator
    // (which holds them) for a delayed one; then addressed: rank r is 10.77.0.(r + 1) on
    // each of its devices, a point-to-point route to its peer.
    std::vector<std::string> argv = {emulator.string()};
    for (size_t i = 0; i < paths.size(); ++i) {
      const EmulatedPath& p = paths[i];
      const std::string dev = fmt::format("em{}", i);
      if (p.latency_s <= kVethLatencyS) {
        run({"ip", "link", "add", dev, "netns", namespace_of(p.a), "type", "veth", "peer",
             "name", dev, "netns", namespace_of(p.b)},
            log);
        continue;
      }
      argv.insert(argv.end(), {"--link", namespace_of(p.a), dev, namespace_of(p.b), dev,
                               std::to_string(static_cast<int64_t>(p.latency_s * 1e6))});
    }
    if (argv.size() > 1) start_emulator(argv);
    for (size_t i = 0; i < paths.size(); ++i) {
      const EmulatedPath& p = paths[i];
      const std::string dev = fmt::format("em{}", i);
      for (const auto& [me, peer] : {std::pair{p.a, p.b}, std::pair{p.b, p.a}}) {
        const std::string ns = namespace_of(me);
        run({"ip", "-n", ns, "addr", "add", fmt::format("10.77.0.{}", me + 1), "peer",
             fmt::format("10.77.0.{}", peer + 1), "dev", dev},
            log);
        const bool shaped = std::isfinite(p.bytes_per_s) && p.bytes_per_s > 0 &&
                            p.bytes_per_s <= kMaxShapedBytesPerS;
        run({"ip", "-n", ns, "link", "set", dev, "mtu",
             std::to_string(emulated_mtu(shaped ? p.bytes_per_s : INFINITY)), "up"},
            log);
        if (shaped) {
          run({"tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate",
               fmt::format("{}bit", static_cast<int64_t>(p.bytes_per_s * 8)), "burst",
               std::to_string(bucket_bytes(p.bytes_per_s)), "latency", "200ms"},
              log);
        }
      }
    }
    // The launch agent: ssh's calling convention (options, host, command), run in the
    // host's namespace. Every namespace keeps the machine's hostname, so the daemons would
    // share one session folder (/tmp/ompi.HOST.UID) and write its hwloc topology file at
    // once: orted then crashed in hwloc_shmem_topology_write in about one launch in ten and
    // mpirun waited forever for it. A session folder per namespace keeps them apart.
    const auto agent = folder_ / "netns-agent";
    std::ofstream(agent)
        << "#!/bin/sh\n"
           "# mpirun's launch agent for emulated links: runs the command in "
           "the namespace named as the host, with a session folder of its own\n"
           "while [ $# -gt 0 ]; do case \"$1\" in -*) shift;; *) break;; esac; done\n"
           "host=$1; shift\n"
           "# A rank with a CPU quota joins its cgroup here: inside the namespace, ip netns\n"
           "# exec's own sysfs hides the cgroup hierarchy (runner/cpu_quota.h).\n"
           "rank=${host##*-r}\n"
           "if [ -n \"$DTSIM_CPU_QUOTAS\" ]; then\n"
           "  [ -d \"$DTSIM_CPU_QUOTAS\" ] || { echo \"netns-agent: no cgroup folder "
           "$DTSIM_CPU_QUOTAS\" >&2; exit 1; }\n"
           "  if [ -d \"$DTSIM_CPU_QUOTAS/rank$rank\" ]; then\n"
           "    echo $$ > \"$DTSIM_CPU_QUOTAS/rank$rank/cgroup.procs\" || { echo \"netns-agent: "
           "rank $rank cannot join $DTSIM_CPU_QUOTAS/rank$rank\" >&2; exit 1; }\n"
           "  fi\n"
           "fi\n"
           "session=\""
        << (folder_ / "session-").string()
        << "$host\"\n"
           "mkdir -p \"$session\"\n"
           "exec ip netns exec \"$host\" env OMPI_MCA_orte_tmpdir_base=\"$session\" "
           "/bin/sh -c \"$*\"\n";
    std::filesystem::permissions(agent, std::filesystem::perms::owner_all);
    std::ofstream hosts(folder_ / "hostfile");
    for (int r = 0; r < ranks_; ++r) hosts << namespace_of(r) << " slots=1\n";
  } catch (...) {
    undo();
    throw;
  }
}

EmulatedNetwork::~EmulatedNetwork() { undo(); }

void EmulatedNetwork::start_emulator(std::vector<std::string> argv) {
  // Everything the child needs is made before fork(): it may only exec.
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("cannot make a pipe");
  emulator_ = ::fork();
  if (emulator_ == 0) {
    // Its own process group: a Ctrl-C at the terminal must not take the links away from
    // running ranks; undo() ends it.
    ::setpgid(0, 0);
    ::dup2(out[1], 1);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  pollfd wait_for{out[0], POLLIN, 0};
  char ready[6] = {};
  const bool up = ::poll(&wait_for, 1, 10000) == 1 && ::read(out[0], ready, 5) == 5 &&
                  std::string(ready) == "ready";
  ::close(out[0]);
  if (!up) throw std::runtime_error("dtsim-link-emulator did not start (" + argv[0] + ")");
}

void EmulatedNetwork::undo() {
  if (!made_) return;
  made_ = false;
  if (emulator_ > 0) {
    ::kill(emulator_, SIGTERM);
    int status = 0;
    ::waitpid(emulator_, &status, 0);
    emulator_ = -1;
  }
  const auto log = folder_ / "network-undo.log";
  for (int r = 0; r < ranks_; ++r) {
    // Deleting a namespace deletes its devices, and a veth's peer with it.
    run_quietly({"ip", "netns", "del", namespace_of(r)}, log);
    run_quietly({"ip", "link", "del", control_device(prefix_, r)}, log);
  }
}

std::string EmulatedNetwork::namespace_of(int rank) const {
  return fmt::format("{}-r{}", prefix_, rank);
}

std::vector<std::string> EmulatedNetwork::namespaces() const {
  std::vector<std::string> out;
  for (int r = 0; r < ranks_; ++r) out.push_back(namespace_of(r));
  return out;
}

std::vector<std::string> EmulatedNetwork::mpirun_options() const {
  return {"--hostfile",
          (folder_ / "hostfile").string(),
          "--mca",
          "plm_rsh_agent",
          (folder_ / "netns-agent").string(),
          "--mca",
          "plm_rsh_no_tree_spawn",
          "1",
          "--mca",
          "oob_tcp_if_include",
          "10.78.0.0/16",
          "--mca",
          "btl",
          "self,tcp",
          "--mca",
          "btl_tcp_if_include",
          "10.77.0.0/16",
          // A rank that waits for the network yields its core between polls: the link
          // emulator's threads forward the packets on the same two cores, where a real
          // network needs none of the ranks' time. Spinning, the ranks took the cores from
          // them and a 22 MB all-reduce on a 10 Gbit/s path took 232 - 248 ms; yielding,
          // 120 - 127 ms.
          "--mca",
          "mpi_yield_when_idle",
          "1"};
}

}  // namespace dtsim
