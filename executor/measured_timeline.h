// What a real run measured: each rank's tasks, step by step, on the clock the ranks share
// (rank 0's), with each rank's clock offset and its uncertainty. Each rank writes its part
// to a file of its own (runner/rank_timeline_file.h); the launcher reads them back into one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "executor/clock_offset.h"
#include "executor/rank_executor.h"
#include "sim/task_graph.h"

namespace dtsim::executor {

struct MeasuredStep {
  int64_t start_ns = 0;         // shared clock: when the rank's step began
  std::vector<TaskSpan> tasks;  // shared clock; per entry of MeasuredRank::tasks
  // Per entry of MeasuredRank::tasks, each op's duration in its compute task, in the order
  // of its op list (empty for the other kinds and for tasks without ops).
  std::vector<std::vector<int64_t>> op_ns;
};

struct MeasuredRank {
  int rank = 0;
  int64_t pid = 0;
  ClockOffset clock;                 // this rank's clock + offset = rank 0's
  std::vector<TaskId> tasks;         // the graph's ids of its tasks, in graph order
  std::vector<MeasuredStep> steps;   // the measured steps (warm-up ones are not kept)
  int64_t operand_bytes = 0;         // its kernels' operand buffers
  int64_t peak_allocated_bytes = 0;  // the most its graph's allocations held at once
};

struct MeasuredRun {
  std::string backend;  // "cpu"
  std::string library;  // the communication library ("Open MPI v4.1.4")
  std::string blas;     // the BLAS the kernels ran with
  int warmup = 0;
  std::vector<MeasuredRank> ranks;  // by rank
};

}  // namespace dtsim::executor
