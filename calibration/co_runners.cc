// CoRunners: threads pinned to the other cores, each looping over the kernel being timed.
#include "calibration/co_runners.h"

#include <pthread.h>

#include <stdexcept>

#include "calibration/kernel_timer.h"
#include "kernels/kernel.h"

namespace dtsim::calibration {

namespace {

cpu_set_t only(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return set;
}

}  // namespace

CoRunners::CoRunners(int count) {
  if (count <= 0) return;
  // Loaded after the caller is pinned below, OpenBLAS would size and pin its workers to one
  // core.
  kernels::load_cpu_blas();
  if (sched_getaffinity(0, sizeof caller_mask_, &caller_mask_) != 0) {
    throw std::invalid_argument("co-runners: this process's cores cannot be read");
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &caller_mask_)) cpus.push_back(cpu);
  }
  if (static_cast<int>(cpus.size()) < count + 1) {
    throw std::invalid_argument("co-runners: " + std::to_string(count) + " co-runner" +
                                (count == 1 ? "" : "s") + " and the timed kernel need " +
                                std::to_string(count + 1) + " cores, and this process may use " +
                                std::to_string(cpus.size()));
  }
  // The timed kernel and each co-runner on a core of its own, as the executor pins its ranks;
  // a co-runner left on the timed core would time the two kernels sharing it.
  const cpu_set_t first = only(cpus[0]);
  if (sched_setaffinity(0, sizeof first, &first) != 0) {
    throw std::invalid_argument("co-runners: the timed thread cannot be pinned to core " +
                                std::to_string(cpus[0]));
  }
  pinned_ = true;
  try {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, i] { loop(i); });
      const int cpu = cpus[static_cast<size_t>(i) + 1];
      const cpu_set_t own = only(cpu);
      if (pthread_setaffinity_np(threads_.back().native_handle(), sizeof own, &own) != 0) {
        throw std::invalid_argument("co-runners: a co-runner cannot be pinned to core " +
                                    std::to_string(cpu));
      }
    }
  } catch (...) {
    stop_and_join();
    throw;
  }
}

CoRunners::~CoRunners() { stop_and_join(); }

void CoRunners::stop_and_join() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  if (pinned_) sched_setaffinity(0, sizeof caller_mask_, &caller_mask_);
  pinned_ = false;
}

void CoRunners::run(const OpSignature& op) {
  if (threads_.empty()) return;
  std::unique_lock lock(mu_);
  // A co-runner that failed while the previous kernel was timed left it with fewer
  // neighbours than the database will say.
  if (!error_.empty()) {
    throw std::runtime_error("a co-runner stopped while \"" + op_.name + "\" was timed: " +
                             error_);
  }
  op_ = op;
  started_count_ = 0;
  paused_ = false;
  error_.clear();
  generation_.fetch_add(1);
  changed_.notify_all();
  started_.wait(lock, [&] { return started_count_ == threads_.size(); });
  if (!error_.empty()) {
    throw std::runtime_error("a co-runner could not run \"" + op.name + "\": " + error_);
  }
}

void CoRunners::pause() {
  if (threads_.empty()) return;
  std::unique_lock lock(mu_);
  paused_ = true;
  waiting_count_ = 0;
  generation_.fetch_add(1);
  changed_.notify_all();
  // A co-runner leaves its loop only between two kernels: until each says it waits, the
  // CPU is not the timed kernel's alone.
  started_.wait(lock, [&] { return waiting_count_ == threads_.size(); });
}

void CoRunners::loop(int /*index*/) {
  uint64_t seen = 0;
  while (true) {
    OpSignature op;
    uint64_t generation = 0;
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
      if (stop_) return;
      generation = seen = generation_.load();
      if (paused_) {
        ++waiting_count_;
        started_.notify_all();
        continue;
      }
      op = op_;
    }
    bool reported = false;
    const auto report = [&](const std::string& error) {
      {
        std::lock_guard lock(mu_);
        if (generation_.load() != generation) return;  // the timed thread moved on
        ++started_count_;
        if (!error.empty() && error_.empty()) error_ = error;
      }
      reported = true;
      started_.notify_all();
    };
    try {
      kernels::OperandBuffers buffers(op);
      CacheFlusher flusher;
      kernels::run_cpu(op, buffers);
      report("");
      while (generation_.load(std::memory_order_relaxed) == generation) {
        flusher.flush();
        kernels::run_cpu(op, buffers);
      }
    } catch (const std::exception& e) {
      if (!reported) {
        report(e.what());
      } else {
        std::lock_guard lock(mu_);
        if (error_.empty()) error_ = e.what();
      }
    }
  }
}

}  // namespace dtsim::calibration
