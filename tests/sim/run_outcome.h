// What exactness tests of the network model's shortcuts compare: every call's end and
// every link's traffic after a run, and the rank lists their calls use.
#pragma once

#include <vector>

#include "sim/simulation.h"

namespace dtsim::testing {

// first, first + stride, ... (n ranks).
inline std::vector<int> ranks_from(int n, int first = 0, int stride = 1) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = first + i * stride;
  return v;
}

struct RunOutcome {
  std::vector<Time> ends;  // by collective id
  std::vector<double> bytes;
  std::vector<Duration> busy;
  std::vector<double> peak;
  RunResult result;
};

// Runs `g` on `c` with `options` and collects what the tests compare.
inline RunOutcome run_outcome(const Cluster& c, const TaskGraph& g, const SimulationOptions& options,
                              SimObserver* observer = nullptr) {
  Simulation sim(c, options);
  if (observer != nullptr) sim.add_observer(observer);
  RunOutcome out;
  out.result = sim.run(g);
  out.ends.resize(g.collectives().size());
  for (const CollectiveRecord& rec : out.result.collectives) out.ends[rec.collective] = rec.end;
  for (LinkId l = 0; l < c.topology.num_links(); ++l) {
    const LinkStats& s = sim.network().link_stats().stats(l);
    out.bytes.push_back(s.bytes);
    out.busy.push_back(s.busy);
    out.peak.push_back(s.peak_utilization);
  }
  return out;
}

}  // namespace dtsim::testing
