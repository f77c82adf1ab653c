// The memory a run will take, estimated before its task graph is built, and the refusal of
// a run that would not fit (exit 2 with the estimate, instead of std::bad_alloc after
// minutes of lowering).
#pragma once

#include <algorithm>
#include <optional>
#include <string>

#include "scenarios/scenario.h"
#include "scenarios/scenario_lowering.h"
#include "sim/cost_model.h"

namespace dtsim {

// What the caller does with the lowered graph: what besides the graph will be held.
struct RunOutputs {
  bool simulate = true;     // `dtsim check` only lowers
  int trace_ranks = 0;      // ranks whose tasks and calls a trace records; 0: no trace
  bool task_times = false;  // every task's times (dtsim run --critical-path)
  int64_t spans = 0;        // task spans a timeline keeps (the GUI's), at most this many
};

// Bytes of one of those spans (gui::Span: a task id and its start and end).
inline constexpr size_t kTimelineSpanBytes = 24;

// Bytes, by what holds them at the run's peak.
struct MemoryEstimate {
  double resident = 0;  // this process now: dtsim's code and libraries, the loaded scenario
  // The most it held so far: loading the libraries touches more than stays resident.
  double peak_so_far = 0;
  double task_graph = 0;   // the lowered graph (and local SGD's second one)
  double lowering = 0;     // what lowering holds besides the graph until it ends
  double simulation = 0;   // the simulator's state for the graph it runs, at its most
  double records = 0;      // the trace's and the critical path's records of each task
  TaskGraphCounts counts;  // of the graph that synchronizes (the one a report describes)
  // The peak: the one so far, or what is resident now with the graph and the larger of
  // lowering's and the run's own memory on top (the run reuses what lowering freed).
  double total() const {
    return std::max(peak_so_far, resident + task_graph + std::max(lowering, simulation + records));
  }
};

// Counts the graph that lowering will build (estimate_lowered_counts) and adds what the
// process holds now and what simulating it and `outputs` hold. Throws ScenarioError for a
// plan that cannot run.
MemoryEstimate estimate_memory(const Scenario& scenario, const CostModel& costs,
                               const RunOutputs& outputs);

// What a run may use: `max_bytes` when given (--max-memory), else what the process holds
// now plus what the machine has available (MemAvailable, and the memory cgroup's room).
struct MemoryLimit {
  double bytes = 0;
  bool given = false;  // --max-memory, rather than the machine's
};
MemoryLimit memory_limit(std::optional<double> max_bytes);

// "31.4 GB (the task graph of 240.1 M tasks 22.1 GB, simulating it 8.9 GB, ...)".
std::string describe_estimate(const MemoryEstimate& estimate);

// Thrown for a run whose estimate exceeds its limit: an InputError at the scenario's root
// (exit 2) whose message gives the estimate, the limit and what makes a run smaller.
class MemoryLimitError : public InputError {
 public:
  MemoryLimitError(const std::string& source, const MemoryEstimate& estimate,
                   const MemoryLimit& limit);
};

// What lower_with_chosen_costs checks before it lowers: the outputs the caller will keep
// and the limit (std::nullopt: the machine's).
struct MemoryBudget {
  RunOutputs outputs;
  std::optional<double> max_bytes;
};

}  // namespace dtsim
