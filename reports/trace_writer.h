// Chrome/Perfetto trace (trace.json): one track per rank and stream, one per busy link,
// and one for collectives. Collects records while the simulation runs, writes at the end.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/observer.h"

namespace dtsim {

class TraceWriter final : public SimObserver {
 public:
  // Records the tasks of ranks below `ranks` only (a training step on thousands of ranks
  // has millions of tasks; a few pipelines' worth is what a reader can look at).
  explicit TraceWriter(int ranks = INT32_MAX) : ranks_(ranks) {}
  void on_task(const TaskRecord& r) override {
    if (r.rank < ranks_) tasks_.push_back(r);
  }
  void on_collective(const CollectiveRecord& r) override { collectives_.push_back(r); }
  void on_link_busy(const LinkBusyRecord& r) override { links_.push_back(r); }

  // Writes the Trace Event Format (JSON object form) that chrome://tracing and
  // ui.perfetto.dev open. Times are microseconds with nanosecond digits, written exactly.
  void write(std::ostream& out, const Scenario& scenario) const;

 private:
  int ranks_;
  std::vector<TaskRecord> tasks_;
  std::vector<CollectiveRecord> collectives_;
  std::vector<LinkBusyRecord> links_;
};

}  // namespace dtsim
