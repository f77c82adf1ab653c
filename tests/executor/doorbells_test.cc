// Doorbells: a ring wakes a stream sleeping on its rank's bell, a ring before the wait is
// not lost (the ticket), and a wait without a ring ends at its timeout.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "executor/doorbells.h"

namespace dtsim::executor {
namespace {

std::filesystem::path bells_file(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("dtsim-bells-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove(p);
  return p;
}

TEST(Doorbells, ARingWakesTheRanksWaiter) {
  const auto file = bells_file("wake");
  Doorbells mine(file, 2, 0);
  Doorbells theirs(file, 2, 1);  // another rank maps the same file
  std::atomic<bool> ready = false;
  std::thread waiter([&] {
    mine.wait_until([&] { return ready.load(); }, std::chrono::microseconds(0),
                    std::chrono::seconds(30));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto t0 = std::chrono::steady_clock::now();
  ready = true;
  theirs.ring(0);
  waiter.join();
  // Woken by the ring, long before the 30 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  std::filesystem::remove(file);
}

TEST(Doorbells, ARingBeforeTheWaitIsNotLost) {
  const auto file = bells_file("early");
  Doorbells mine(file, 2, 0);
  Doorbells theirs(file, 2, 1);
  const uint32_t ticket = mine.ticket();
  theirs.ring(0);
  EXPECT_NE(mine.ticket(), ticket);
  const auto t0 = std::chrono::steady_clock::now();
  mine.wait(ticket, std::chrono::seconds(30));  // returns at once: the bell moved on
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  std::filesystem::remove(file);
}

TEST(Doorbells, AWaitWithoutARingEndsAtItsTimeout) {
  const auto file = bells_file("timeout");
  Doorbells mine(file, 1, 0);
  const auto t0 = std::chrono::steady_clock::now();
  mine.wait(mine.ticket(), std::chrono::milliseconds(30));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(25));
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace dtsim::executor
