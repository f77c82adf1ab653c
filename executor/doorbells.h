// Doorbells: one word per rank in a file every rank of a run maps, so that a stream waiting
// for a peer sleeps in the kernel (a futex) until the peer rings, instead of spinning or
// polling. A rank's streams share its one core, and both cost the compute stream beside
// them: Open MPI's blocking calls spin while they wait, and polling every 10-200 us
// slowed the pipeline case's kernels by a third on this VM (its timer wake-ups are dear).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>

namespace dtsim::executor {

class Doorbells {
 public:
  // Maps `file` (created, zero-filled, when it does not exist), sized for `ranks`. Throws
  // std::runtime_error when it cannot.
  Doorbells(const std::filesystem::path& file, int ranks, int rank);
  ~Doorbells();
  Doorbells(const Doorbells&) = delete;
  Doorbells& operator=(const Doorbells&) = delete;

  // Wakes every stream of `rank` that waits on its bell.
  void ring(int rank);
  // My bell's count: read it before checking for what you wait for, then wait on it, so
  // that a ring between the check and the wait is not lost.
  uint32_t ticket() const;
  // Sleeps until my bell rings past `ticket` or `timeout` passes (a safety net: a peer's
  // progress may need a test of ours that no ring announces).
  void wait(uint32_t ticket, std::chrono::microseconds timeout) const;

  // Tests `done` until it holds: spinning for `spin` first (spin-then-block, as adaptive
  // mutexes do: a peer that is nearly there costs no wake-up, which on this VM takes
  // ~0.2 ms, longer than a 512 KiB all-reduce), then sleeping on my bell between tests.
  // A ring means a peer acted and an exchange may need a few more tests to complete (MPI
  // moves a request only while its owner tests it), so after a ring it spins again; after
  // a timeout it tests once and sleeps, which costs the compute stream nothing.
  template <typename Done>
  void wait_until(Done done, std::chrono::microseconds spin = std::chrono::microseconds(100),
                  std::chrono::microseconds timeout = std::chrono::milliseconds(2)) const {
    bool rang = true;
    while (true) {
      if (rang) {
        const auto spin_until = std::chrono::steady_clock::now() + spin;
        while (std::chrono::steady_clock::now() < spin_until) {
          if (done()) return;
        }
      }
      const uint32_t t = ticket();
      if (done()) return;
      wait(t, timeout);
      rang = ticket() != t;
    }
  }

 private:
  struct alignas(64) Bell {
    uint32_t count;
  };
  Bell* bells_ = nullptr;
  int ranks_ = 0;
  int rank_ = 0;
};

}  // namespace dtsim::executor
