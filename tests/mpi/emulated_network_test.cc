// Emulated links: two namespaces joined by a TUN pair through dtsim-link-emulator and shaped
// by tbf deliver the configured rate and delay within 10%, a short path (a veth pair, no
// delay line) its rate, and they leave nothing behind.
// Needs root, /dev/net/tun, ip and tc: skipped without them.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "runner/emulated_network.h"

namespace dtsim {
namespace {

using Clock = std::chrono::steady_clock;

bool enter(const std::string& ns) {
  const int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && ::setns(fd, CLONE_NEWNET) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

sockaddr_in address(const char* ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

std::filesystem::path folder() {
  return std::filesystem::temp_directory_path() / ("dtsim-net-" + std::to_string(::getpid()));
}

// Half the shortest round trip of one byte, and the receiver's rate over the second half
// of `bytes` (past TCP's slow start), rank 0 sending to rank 1.
struct LinkFigures {
  double one_way_s = 0;
  double bits_per_s = 0;
};

LinkFigures measure(const EmulatedNetwork& net, int64_t bytes) {
  LinkFigures f;
  constexpr int kPort = 46711;
  std::thread server([&] {
    if (!enter(net.namespace_of(1))) return;
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    const int on = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    const sockaddr_in a = address("10.77.0.2", kPort);
    if (::bind(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 1) != 0)
      return;
    const int c = ::accept(s, nullptr, nullptr);
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    char b = 0;
    for (int i = 0; i < 20; ++i) {
      if (::recv(c, &b, 1, MSG_WAITALL) != 1 || ::send(c, &b, 1, 0) != 1) return;
    }
    std::vector<char> buffer(1 << 16);
    int64_t got = 0;
    Clock::time_point half;
    while (got < bytes) {
      const ssize_t n = ::recv(c, buffer.data(), buffer.size(), 0);
      if (n <= 0) return;
      if (got < bytes / 2 && got + n >= bytes / 2) half = Clock::now();
      got += n;
    }
    const double s_half = std::chrono::duration<double>(Clock::now() - half).count();
    f.bits_per_s = static_cast<double>(bytes - bytes / 2) * 8 / s_half;
    ::close(c);
    ::close(s);
  });
  std::thread client([&] {
    if (!enter(net.namespace_of(0))) return;
    const int c = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in a = address("10.77.0.2", kPort);
    bool connected = false;
    for (int i = 0; i < 100 && !connected; ++i) {
      connected = ::connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
      if (!connected) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!connected) return;
    const int on = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    double best = 1e9;
    char b = 1;
    for (int i = 0; i < 20; ++i) {
      const auto t0 = Clock::now();
      if (::send(c, &b, 1, 0) != 1 || ::recv(c, &b, 1, MSG_WAITALL) != 1) return;
      best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    f.one_way_s = best / 2;
    std::vector<char> buffer(1 << 16, 'x');
    for (int64_t sent = 0; sent < bytes;) {
      const ssize_t n = ::send(
          c, buffer.data(), static_cast<size_t>(std::min<int64_t>(buffer.size(), bytes - sent)), 0);
      if (n <= 0) return;
      sent += n;
    }
    ::shutdown(c, SHUT_WR);
    ::close(c);
  });
  client.join();
  server.join();
  return f;
}

// A link's rate is what it can carry: the best of three transfers, so that a moment of
// this machine's noise does not pass for the link's.
LinkFigures best_of_three(const EmulatedNetwork& net, int64_t bytes) {
  LinkFigures f;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const LinkFigures m = measure(net, bytes);
    f.bits_per_s = std::max(f.bits_per_s, m.bits_per_s);
    f.one_way_s = attempt == 0 ? m.one_way_s : std::min(f.one_way_s, m.one_way_s);
  }
  return f;
}

bool namespace_exists(const std::string& ns) {
  return std::filesystem::exists("/var/run/netns/" + ns);
}

TEST(EmulatedNetwork, DeliversItsRateAndDelayWithinTenPercent) {
  if (const std::string why = emulation_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const EmulatedPath path{0, 1, 100e6 / 8, 0.020};  // 100 Mbit/s, 20 ms
  std::vector<std::string> names;
  {
    const EmulatedNetwork net(2, {path}, DTSIM_LINK_EMULATOR, folder());
    names = net.namespaces();
    const LinkFigures f = best_of_three(net, 16 << 20);
    std::printf("emulated 100 Mbit/s, 20 ms: measured %.1f Mbit/s, %.2f ms one way\n",
                f.bits_per_s / 1e6, f.one_way_s * 1e3);
    // TCP carries 1,448 bytes of every 1,500-byte packet: its rate is 96.5% of the link's.
    EXPECT_NEAR(f.bits_per_s, 100e6 * 1448 / 1500, 0.1 * 100e6) << f.bits_per_s / 1e6 << " Mbit/s";
    EXPECT_NEAR(f.one_way_s, 0.020, 0.002) << f.one_way_s * 1e3 << " ms";
  }
  for (const std::string& ns : names) EXPECT_FALSE(namespace_exists(ns)) << ns;
  std::filesystem::remove_all(folder());
}

TEST(EmulatedNetwork, AShortPathIsAVethPairThatCarriesItsRate) {
  if (const std::string why = emulation_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  // 2 Gbit/s, beyond what the delay line carried here (1.4 Gbit/s at most); 10 us.
  const EmulatedPath path{0, 1, 2e9 / 8, 10e-6};
  std::vector<std::string> names;
  {
    // No delay line is started for it: an emulator that is not there is not needed.
    const EmulatedNetwork net(2, {path}, "/nonexistent/dtsim-link-emulator", folder());
    names = net.namespaces();
    const LinkFigures f = best_of_three(net, 64 << 20);
    std::printf("emulated 2 Gbit/s, 10 us: measured %.1f Mbit/s, %.3f ms one way\n",
                f.bits_per_s / 1e6, f.one_way_s * 1e3);
    // 64,000-byte packets: TCP's headers are a tenth of a percent of each.
    EXPECT_NEAR(f.bits_per_s, 2e9, 0.1 * 2e9) << f.bits_per_s / 1e6 << " Mbit/s";
    EXPECT_LT(f.one_way_s, 0.5e-3) << f.one_way_s * 1e3 << " ms";
  }
  for (const std::string& ns : names) EXPECT_FALSE(namespace_exists(ns)) << ns;
  std::filesystem::remove_all(folder());
}

TEST(EmulatedNetwork, RefusesAnEmulatorThatIsNotThereAndLeavesNothing) {
  if (const std::string why = emulation_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const EmulatedPath path{0, 1, 100e6 / 8, 0.001};
  EXPECT_THROW(EmulatedNetwork(2, {path}, "/nonexistent/dtsim-link-emulator", folder()),
               std::runtime_error);
  for (const auto& e : std::filesystem::directory_iterator("/var/run/netns")) {
    EXPECT_EQ(e.path().filename().string().rfind("dtsim-" + std::to_string(::getpid()) + "-", 0),
              std::string::npos)
        << e.path();
  }
  std::filesystem::remove_all(folder());
}

}  // namespace
}  // namespace dtsim
