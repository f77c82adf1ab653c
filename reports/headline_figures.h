// The few figures of a run that sweeps, the plan grid and comparisons put side by side,
// read from its summary (make_summary's JSON), and the rule that picks the fastest plan
// that fits: one reading for `dtsim plans` and the GUI alike.
#pragma once

#include <nlohmann/json.hpp>

namespace dtsim {

struct HeadlineFigures {
  bool completed = false;     // the run ran to its end (false too for one that never ran)
  double step_s = 0;          // the training iteration (with local SGD the mean one), else the run
  double tokens_per_s = 0;    // training, else 0
  double mfu = 0;             // training, else 0
  double peak_bytes = 0;      // the highest peak of any rank (training), else 0
  double capacity_bytes = 0;  // the memory of the device with that peak
  int oom_ranks = 0;          // ranks whose memory went over their capacity
};

// The simulated step of a summary: training.iteration_time_s, else simulated_time_s.
double step_seconds(const nlohmann::ordered_json& summary);
HeadlineFigures headline_figures(const nlohmann::ordered_json& summary);

// The index of the fastest completed run with no rank out of memory; -1 when none. Ties go
// to the first. `Runs` holds HeadlineFigures or types derived from it.
template <typename Runs>
int fastest_that_fits(const Runs& runs) {
  int best = -1;
  int i = 0;
  for (const HeadlineFigures& f : runs) {
    if (f.completed && f.oom_ranks == 0 &&
        (best < 0 || f.step_s < runs[static_cast<size_t>(best)].step_s))
      best = i;
    ++i;
  }
  return best;
}

}  // namespace dtsim
