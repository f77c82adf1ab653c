// The memory estimate: the graph's counts from a sampled lowering, priced by the sizes of
// the structures that hold them, plus what the process holds when it is made.
#include "runner/memory_estimate.h"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>

#include "reports/trace_writer.h"
#include "runner/memory_admission.h"
#include "sim/sanitizer.h"
#include "sim/simulation.h"
#include "sim/unit_parse.h"

namespace dtsim {

namespace {

Bytes bytes_of(double b) {
  return Bytes(static_cast<int64_t>(std::min(b, static_cast<double>(INT64_MAX / 2))));
}

std::string size_text(double b) { return format_bytes(bytes_of(b)); }

}  // namespace

MemoryEstimate estimate_memory(const Scenario& s, const CostModel& costs,
                               const RunOutputs& outputs) {
  MemoryEstimate e;
  const bool observed = outputs.trace_ranks > 0 || outputs.task_times;
  const LoweredCounts counts = estimate_lowered_counts(s, costs, observed);
  // Measured after the sample lowering and the network's plan: the code those ran (the
  // lowering's, the cluster's routes) is then resident, as it will be in the run. What they
  // allocated and freed is handed back first (glibc keeps freed pages resident for reuse),
  // or it would be counted twice: here and as the run's own.
  // Not under AddressSanitizer: its allocator holds the heap, and glibc's, never used,
  // sets itself up inside malloc_trim unguarded, so that a sweep's points estimating in
  // parallel threads raced there (a SEGV in CI's asan run of Cli.SweepRunsTheCartesianProduct).
#ifndef DTSIM_ASAN
  malloc_trim(0);
#endif
  e.resident = static_cast<double>(resident_memory_bytes());
  e.peak_so_far = static_cast<double>(peak_resident_memory_bytes());
  e.counts = counts.graph;
  // A task graph scenario holds its graph already: lowering copies it, to price it.
  e.task_graph = TaskGraph::bytes_for(counts.graph);
  if (counts.local_graph) e.task_graph += TaskGraph::bytes_for(*counts.local_graph);
  for (const TaskGraphCounts& phase : counts.phase_graphs)
    e.task_graph += TaskGraph::bytes_for(phase);
  e.lowering = counts.lowering_working_bytes;
  const int ranks = s.cluster.num_ranks();
  if (outputs.simulate) {
    // The two steps of local SGD run one after the other: the larger one's state counts.
    // The lowering declares its streams per rank; a sample's count is not known here, so
    // the lowering's most (compute, dp, four pipeline directions, overlapped TP) is taken.
    constexpr size_t kStreams = 7;
    e.simulation =
        Simulation::peak_bytes_for(counts.graph, ranks, kStreams, observed) + counts.network_bytes;
    if (counts.local_graph) {
      e.simulation = std::max(
          e.simulation, Simulation::peak_bytes_for(*counts.local_graph, ranks, kStreams, false));
    }
    for (const TaskGraphCounts& phase : counts.phase_graphs) {
      e.simulation =
          std::max(e.simulation, Simulation::peak_bytes_for(phase, ranks, kStreams, false));
    }
    if (outputs.trace_ranks > 0) {
      // Tasks spread evenly over the ranks; a call is recorded once when any member is
      // traced, so the traced members bound the traced calls.
      const double traced = std::min(1.0, static_cast<double>(outputs.trace_ranks) / ranks);
      e.records += traced * counts.graph.tasks * sizeof(TaskRecord);
      e.records += std::min(counts.graph.collectives, traced * counts.graph.collective_members) *
                   sizeof(CollectiveRecord);
      // Links' busy spans, one per round over each link: their number is known only once
      // the run is made, so the trace holds at most a buffer of them (the rest on disk).
      e.records += TraceWriter::kMaxLinkRecordBytes;
    }
    if (outputs.task_times) e.records += counts.graph.tasks * (2 * sizeof(Time) + 1.0 / 8);
    e.records += std::min(counts.graph.tasks, static_cast<double>(outputs.spans)) *
                 static_cast<double>(kTimelineSpanBytes);
  }
  return e;
}

MemoryLimit memory_limit(std::optional<double> max_bytes) {
  if (max_bytes) return {*max_bytes, true};
  return {
      static_cast<double>(resident_memory_bytes()) + static_cast<double>(available_memory_bytes()),
      false};
}

std::string describe_estimate(const MemoryEstimate& e) {
  std::string text = fmt::format("{} (the task graph of {:.3g} M tasks {}", size_text(e.total()),
                                 e.counts.tasks / 1e6, size_text(e.task_graph));
  if (e.lowering > 0) text += ", lowering's working set " + size_text(e.lowering);
  if (e.simulation > 0) text += ", simulating it " + size_text(e.simulation);
  if (e.records > 0) text += ", its trace records " + size_text(e.records);
  return text + ", dtsim and the loaded scenario " + size_text(e.resident) + ")";
}

MemoryLimitError::MemoryLimitError(const std::string& source, const MemoryEstimate& estimate,
                                   const MemoryLimit& limit)
    : InputError(
          source,
          {{"", "this run needs an estimated " + describe_estimate(estimate) + ", more than the " +
                    size_text(limit.bytes) +
                    (limit.given ? " that --max-memory allows" : " this machine has available") +
                    "; a coarser simulation.granularity, fewer ranks or fewer "
                    "micro-batches make it smaller" +
                    (limit.given ? std::string()
                                 : std::string(", and --max-memory sets the limit"))}}) {}

}  // namespace dtsim
