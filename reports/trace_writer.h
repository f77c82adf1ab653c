// Chrome/Perfetto trace (trace.json): one track per rank and stream, a memory counter per
// rank, one track per busy link, and one for collectives. Collects records while the simulation
// runs, writes at the end.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "models/scenario_result.h"
#include "reports/spilled_records.h"
#include "sim/observer.h"

namespace dtsim {

class TraceWriter final : public SimObserver {
 public:
  TraceWriter() = default;
  // Records only what concerns ranks below `ranks`: their tasks, the collective calls they
  // take part in, and the links of their nodes. A training step on thousands of ranks has
  // millions of tasks and link spans; a few pipelines' worth is what a reader can look at.
  TraceWriter(const LoweredScenario& scenario, int ranks);
  void on_task(const TaskRecord& r) override {
    if (r.rank < ranks_) tasks_.push_back(r);
  }
  void on_collective(const CollectiveRecord& r) override {
    if (traced_collectives_.empty() || traced_collectives_[r.collective]) collectives_.push_back(r);
  }
  void on_link_busy(const LinkBusyRecord& r) override {
    if (traced_links_.empty() || traced_links_[r.link]) links_.push_back(r);
  }

  // Writes the Trace Event Format (JSON object form) that chrome://tracing and
  // ui.perfetto.dev open. Times are microseconds with nanosecond digits, written exactly.
  void write(std::ostream& out, const LoweredScenario& scenario) const;

  // The most the link records hold in memory, whatever their number.
  static constexpr double kMaxLinkRecordBytes = SpilledRecords<LinkBusyRecord>::kMaxBytes;

 private:
  int ranks_ = INT32_MAX;
  std::vector<bool> traced_collectives_;  // empty: all
  std::vector<bool> traced_links_;        // empty: all
  std::vector<TaskRecord> tasks_;
  std::vector<CollectiveRecord> collectives_;
  // A link is busy once per round of each collective over it: the trace's largest set of
  // records in a collective sweep, so it is kept in a bounded buffer and spilled to disk.
  SpilledRecords<LinkBusyRecord> links_;
};

}  // namespace dtsim
