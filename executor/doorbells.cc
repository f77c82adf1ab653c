// Doorbells: process-shared futex words in a MAP_SHARED file.
#include "executor/doorbells.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

namespace dtsim::executor {

Doorbells::Doorbells(const std::filesystem::path& file, int ranks, int rank)
    : ranks_(ranks), rank_(rank) {
  const size_t size = sizeof(Bell) * static_cast<size_t>(ranks);
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("cannot open the doorbells " + file.string() + ": " +
                             std::strerror(errno));
  }
  // Every rank sizes the file alike; growing a new file fills it with zeros.
  void* p = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(size)) == 0) {
    p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int saved = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    throw std::runtime_error("cannot map the doorbells " + file.string() + ": " +
                             std::strerror(saved));
  }
  bells_ = static_cast<Bell*>(p);
}

Doorbells::~Doorbells() {
  if (bells_) ::munmap(bells_, sizeof(Bell) * static_cast<size_t>(ranks_));
}

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
