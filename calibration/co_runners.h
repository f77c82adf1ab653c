// Co-runners: while a CPU kernel is timed on one core, the same kernel runs on other cores,
// each on buffers of its own, as the other ranks of a step on the same CPU run theirs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>

#include "sim/op_signature.h"

namespace dtsim::calibration {

// A CPU's cores share its last-level cache and its memory bandwidth, so a kernel can run
// slower while its neighbours run theirs than alone (on the development VM a 512 x 1024 x
// 256 GEMM took 2.87 ms alone, 2.90 ms beside a busy loop and 3.09 - 3.18 ms beside a process
// that alternated GEMMs with 64 MiB cache flushes; how much depends on the hour:
// docs/cost-database.md, docs/real-execution.md). A step's ranks on one CPU compute at the
// same time, so its kernels are timed beside co-runners.
class CoRunners {
 public:
  // Pins the calling thread to the first core of its affinity mask and starts `count`
  // threads pinned to the next ones. Throws std::invalid_argument when the mask has fewer
  // than count + 1 cores or a thread cannot be pinned (nothing is left running then). count
  // 0 starts nothing and pins nothing.
  explicit CoRunners(int count);
  ~CoRunners();  // stops the threads and gives the caller its affinity mask back
  CoRunners(const CoRunners&) = delete;
  CoRunners& operator=(const CoRunners&) = delete;

  int count() const { return static_cast<int>(threads_.size()); }
  // Every co-runner runs `op` in a loop (its L2 evicted between runs, as the timed repeats'
  // is) from now until the next call; returns once each has run it once. Throws
  // std::runtime_error, naming the op, when a co-runner could not run it, or stopped while
  // the previous op was timed.
  void run(const OpSignature& op);
  // Every co-runner finishes the kernel it is running and waits, until the next run():
  // the timed kernel then has the CPU to itself.
  void pause();

 private:
  void loop(int index);
  void stop_and_join();

  std::vector<std::thread> threads_;
  cpu_set_t caller_mask_{};
  bool pinned_ = false;
  std::mutex mu_;
  std::condition_variable changed_;  // a new op, or stop
  std::condition_variable started_;  // a co-runner ran the new op once, failed, or paused
  OpSignature op_;
  std::atomic<uint64_t> generation_{0};  // bumped per op; a co-runner leaves its loop on a change
  uint64_t started_count_ = 0;           // co-runners that ran generation_'s op once
  bool paused_ = false;                  // generation_ asks the co-runners to wait
  uint64_t waiting_count_ = 0;           // co-runners that stopped for generation_'s pause
  std::string error_;
  bool stop_ = false;
};

}  // namespace dtsim::calibration
