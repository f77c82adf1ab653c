// Memory admission for dtsim reproduce: the first job runs alone, a job whose reserve the
// machine cannot hold waits for the running ones, and the reserve is the largest growth.
#include "runner/memory_admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace dtsim {
namespace {

TEST(MemoryAdmission, TheFirstJobRunsAloneUntilItIsMeasured) {
  MemoryAdmission admission;
  const uint64_t at = admission.admit();
  std::atomic<bool> second_in{false};
  std::thread second([&] {
    admission.admit();
    second_in = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(second_in) << "a second job started before the first was measured";
  admission.release(at, at + 1024);
  second.join();
  EXPECT_TRUE(second_in);
  EXPECT_EQ(admission.reserve(), 1024u);
}

TEST(MemoryAdmission, AReserveBeyondTheMachineWaitsForTheRunningJob) {
  MemoryAdmission admission;
  const uint64_t at = admission.admit();
  // The measured job took more than any machine has: the next may only run alone.
  admission.release(at, at + (uint64_t{1} << 62));
  const uint64_t again = admission.admit();
  std::atomic<bool> in{false};
  std::thread other([&] {
    admission.admit();
    in = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(in);
  admission.release(again, again);
  other.join();
  EXPECT_TRUE(in);
  EXPECT_EQ(admission.reserve(), uint64_t{1} << 62);  // the largest growth stays
}

TEST(MemoryAdmission, ReadsTheMachineAndTheProcess) {
  EXPECT_GT(available_memory_bytes(), 0u);
  EXPECT_GT(resident_memory_bytes(), 0u);
}

}  // namespace
}  // namespace dtsim
