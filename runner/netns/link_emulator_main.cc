// dtsim-link-emulator: the delay of an emulated link between two network namespaces (this
// kernel has no netem). It creates a TUN device in each namespace and copies every packet
// from one to the other after the link's one-way latency; `tc tbf` on the devices shapes
// the rate (runner/emulated_network.h). It prints "ready" once both devices exist and runs
// until SIGTERM.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "dtsim-link-emulator: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

// A TUN device `name` in the network namespace `ns` (/var/run/netns/ns); the calling thread
// returns to this process's own namespace after.
int tun_in(const std::string& ns, const std::string& name) {
  const int own = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const int target = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (own < 0 || target < 0) die("opening the namespace " + ns);
  if (::setns(target, CLONE_NEWNET) != 0) die("entering the namespace " + ns);
  const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) die("opening /dev/net/tun");
  ifreq req{};
  req.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd, TUNSETIFF, &req) != 0) die("creating the TUN device " + name + " in " + ns);
  if (::setns(own, CLONE_NEWNET) != 0) die("returning to the launcher's namespace");
  ::close(own);
  ::close(target);
  return fd;
}

// One direction of the link: packets read from `from` are written to `to` `delay` later,
// in order (one latency for every packet keeps them in order).
class DelayLine {
 public:
  DelayLine(int from, int to, Clock::duration delay) : from_(from), to_(to), delay_(delay) {}
  void start() {
    reader_ = std::thread([this] { read_loop(); });
    writer_ = std::thread([this] { write_loop(); });
  }
  void join() {
    reader_.join();
    writer_.join();
  }

 private:
  struct Packet {
    Clock::time_point due;
    std::vector<char> bytes;
  };
  void read_loop() {
    std::vector<char> buffer(65536);
    while (true) {
      const ssize_t n = ::read(from_, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      std::lock_guard lock(mu_);
      queue_.push_back(
          {Clock::now() + delay_, std::vector<char>(buffer.begin(), buffer.begin() + n)});
      ready_.notify_one();
    }
  }
  void write_loop() {
    std::unique_lock lock(mu_);
    while (true) {
      ready_.wait(lock, [&] { return !queue_.empty(); });
      // Every packet waits the same latency, so the front is always the first one due.
      const Clock::time_point due = queue_.front().due;
      if (Clock::now() < due) {
        ready_.wait_until(lock, due);
        continue;
      }
      Packet p = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      // A full device queue drops the packet, as a congested link would; TCP resends it.
      (void)!::write(to_, p.bytes.data(), p.bytes.size());
      lock.lock();
    }
  }
  int from_;
  int to_;
  Clock::duration delay_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Packet> queue_;
  std::thread reader_;
  std::thread writer_;
};

int usage() {
  std::fprintf(stderr, "usage: dtsim-link-emulator --link NS_A DEV_A NS_B DEV_B DELAY_US ...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::unique_ptr<DelayLine>> lines;
  for (int i = 1; i < argc; i += 6) {
    if (std::string(argv[i]) != "--link" || i + 5 >= argc) return usage();
    const int a = tun_in(argv[i + 1], argv[i + 2]);
    const int b = tun_in(argv[i + 3], argv[i + 4]);
    const auto delay = std::chrono::microseconds(std::stoll(argv[i + 5]));
    lines.push_back(std::make_unique<DelayLine>(a, b, delay));
    lines.push_back(std::make_unique<DelayLine>(b, a, delay));
  }
  if (lines.empty()) return usage();
  for (auto& l : lines) l->start();
  std::printf("ready\n");
  std::fflush(stdout);
  // Runs until the launcher's SIGTERM: the threads never return while the devices exist.
  for (auto& l : lines) l->join();
  return 0;
}
