// Doorbells: process-shared futex words in a MAP_SHARED file.
#include "executor/doorbells.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <ctime>

#include "executor/shared_file.h"

namespace dtsim::executor {

Doorbells::Doorbells(const std::filesystem::path& file, int ranks, int rank)
    : ranks_(ranks), rank_(rank) {
  const size_t size = sizeof(Bell) * static_cast<size_t>(ranks);
  // Every rank sizes the file alike; growing a new file fills it with zeros.
  bells_ = static_cast<Bell*>(map_shared_file(file, size, false, "the doorbells"));
}

Doorbells::~Doorbells() { unmap_shared_file(bells_, sizeof(Bell) * static_cast<size_t>(ranks_)); }

void Doorbells::ring(int rank) {
  uint32_t& word = bells_[rank].count;
  std::atomic_ref<uint32_t>(word).fetch_add(1, std::memory_order_release);
  ::syscall(SYS_futex, &word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

uint32_t Doorbells::ticket() const {
  return std::atomic_ref<uint32_t>(bells_[rank_].count).load(std::memory_order_acquire);
}

void Doorbells::wait(uint32_t ticket, std::chrono::microseconds timeout) const {
  timespec t{};
  t.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
  t.tv_nsec = static_cast<long>(timeout.count() % 1000000) * 1000;
  // Returns at once when the bell has rung since `ticket` was read (EAGAIN), on a ring, on
  // the timeout, or on a signal: the caller tests again in every case.
  ::syscall(SYS_futex, &bells_[rank_].count, FUTEX_WAIT, ticket, &t, nullptr, 0);
}

}  // namespace dtsim::executor
