// RankExecutor: stream threads released by dependency counts under one lock.
#include "executor/rank_executor.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace dtsim::executor {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

StepTimes RankExecutor::run_step(const std::function<void()>& gate) {
  StepTimes times;
  times.tasks.resize(plan_.tasks.size());
  std::vector<uint32_t> waiting = plan_.deps;
  std::mutex mu;
  std::condition_variable changed;
  bool open = false;
  std::exception_ptr failure;

  auto run_queue = [&](const std::vector<uint32_t>& queue) {
    for (uint32_t local : queue) {
      {
        std::unique_lock lock(mu);
        changed.wait(lock, [&] { return failure || (open && waiting[local] == 0); });
        if (failure) return;
      }
      const TaskId id = plan_.tasks[local];
      if (listener_) listener_->started(id);
      TaskSpan& span = times.tasks[local];
      span.start_ns = steady_now_ns();
      try {
        work_.run(id, graph_.task(id));
      } catch (...) {
        if (on_failure_) {
          try {
            throw;
          } catch (const std::exception& e) {
            on_failure_(id, e);
          } catch (...) {
            on_failure_(id, std::runtime_error("a non-standard exception"));
          }
        }
        std::lock_guard lock(mu);
        if (!failure) failure = std::current_exception();
        changed.notify_all();
        return;
      }
      span.end_ns = steady_now_ns();
      if (listener_) listener_->finished(id);
      std::lock_guard lock(mu);
      for (uint32_t d : plan_.dependents[local]) --waiting[d];
      changed.notify_all();
    }
  };

  std::vector<std::jthread> threads;
  threads.reserve(plan_.queues.size());
  try {
    for (const auto& queue : plan_.queues) threads.emplace_back(run_queue, std::cref(queue));
  } catch (...) {
    // The threads already started wait for the gate: release them before they are joined.
    {
      std::lock_guard lock(mu);
      failure = std::current_exception();
      changed.notify_all();
    }
    threads.clear();
    throw;
  }
  try {
    if (gate) gate();
  } catch (...) {
    std::lock_guard lock(mu);
    failure = std::current_exception();
    changed.notify_all();
  }
  {
    std::lock_guard lock(mu);
    times.start_ns = steady_now_ns();
    open = true;
    changed.notify_all();
  }
  threads.clear();  // joins
  if (failure) std::rethrow_exception(failure);
  return times;
}

}  // namespace dtsim::executor
