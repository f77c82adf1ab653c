// Running the points of a sweep (`dtsim sweep`, `dtsim plans`, the GUI's sweeps) on several
// threads: how many, and a loop that hands each point to the next free thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace dtsim {

// The threads for `points` points when `asked` were asked for (0: one per core): at least
// one, at most one per point.
inline unsigned parallel_jobs(unsigned asked, size_t points) {
  const unsigned want = asked ? asked : std::thread::hardware_concurrency();
  return std::clamp<unsigned>(want, 1, static_cast<unsigned>(std::max<size_t>(points, 1)));
}

// Calls run(i) for every i in [0, points) on parallel_jobs(jobs, points) threads, each
// taking the next point not yet taken; returns when all have returned.
template <typename Run>
void run_points_in_parallel(size_t points, unsigned jobs, const Run& run) {
  std::atomic<size_t> next{0};
  std::vector<std::jthread> threads;
  for (unsigned j = 0; j < parallel_jobs(jobs, points); ++j) {
    threads.emplace_back([&] {
      for (size_t i; (i = next++) < points;) run(i);
    });
  }
}

}  // namespace dtsim
