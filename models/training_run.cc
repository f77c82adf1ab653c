// The parts of a whole training run around its simulated steps.
#include "models/training_run.h"

#include <algorithm>
#include <cmath>

#include "models/memory_model.h"
#include "models/recompute.h"
#include "models/workload.h"

namespace dtsim::models {

RunParts training_run_parts(const RunSetup& run, const RunStep& step) {
  RunParts parts;
  const double rate = run.input_rate_per_node() * step.nodes;
  double iterations = 0;
  std::vector<RunStep::Phase> all = step.phases;
  all.push_back({step.iterations, step.iteration_s, step.samples_per_iteration});
  for (const RunStep::Phase& p : all) {
    iterations += p.iterations;
    parts.steps += p.iterations * p.iteration_s;
    if (rate > 0) {
      const double input_s = p.samples_per_iteration / rate;
      if (input_s > p.iteration_s) {
        parts.input_bound = true;
        parts.input_wait += p.iterations * (input_s - p.iteration_s);
      }
    }
  }
  if (run.eval_every > 0) {
    const double passes = std::floor(iterations / static_cast<double>(run.eval_every));
    parts.eval = passes * static_cast<double>(run.eval_samples) * step.eval_s_per_sample;
  }
  if (run.checkpoint_every > 0) {
    const double writes = std::floor(iterations / static_cast<double>(run.checkpoint_every));
    const double bandwidth = run.checkpoint_write_bandwidth.bytes_per_second() * step.nodes;
    parts.checkpoint = writes * step.checkpoint_bytes / bandwidth;
  }
  parts.startup = run.startup.seconds();
  return parts;
}

double forward_share(const Workload& w, const RecomputePolicy& recompute) {
  double forward = 0, backward = 0, rerun = 0;
  for (const Layer& layer : w.layers) {
    const bool full = recompute.mode == Recompute::kFull && recomputed_by_full(layer.kind);
    for (const Op& op : layer.ops) {
      const double f = op.fwd_flops * op.executed_fraction;
      forward += f;
      backward += op.bwd_flops * op.executed_fraction;
      if (full || recompute.selects(op.rerun_by())) rerun += f;
    }
  }
  const double all = forward + backward + rerun;
  return all > 0 ? forward / all : 0.0;
}

}  // namespace dtsim::models
