// A run's batch-size schedule: phases of smaller global batches before the configured one
// (Megatron-LM's --rampup-batch-size, or batch-size control across phases), how many
// iterations each takes, and which of their batch sizes are simulated.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dtsim::models {

// A phase of the run at `global_batch` that lasts until `samples` more samples are
// consumed (counted from the phase before it), as Megatron-LM's batch-size calculator
// switches batch sizes at fixed consumed-sample boundaries.
struct BatchPhase {
  int64_t global_batch = 0;
  int64_t samples = 0;
  bool operator==(const BatchPhase&) const = default;
};

// Megatron-LM's --rampup-batch-size <start> <increment> <ramp_samples> before
// `global_batch` (megatron/core/num_microbatches_calculator.py): (global - start) /
// increment steps of `increment`, each lasting ramp_samples / steps samples. Empty with a
// sentence in `problem` when the numbers do not make a ramp.
// Beyond this many steps a ramp is a typo (each step is a phase held in memory).
inline constexpr int64_t kMostRampSteps = 100'000;
std::vector<BatchPhase> megatron_rampup(int64_t start, int64_t increment, int64_t ramp_samples,
                                        int64_t global_batch, std::string& problem);

// The iterations a phase runs: batches are consumed whole, so a phase ends on the first
// iteration that reaches its boundary, and the next one starts from where it stopped.
struct PhaseIterations {
  int64_t global_batch = 0;
  int64_t iterations = 0;
  int64_t samples = 0;  // consumed by them
};
// A run of `total_samples` ends where it ends, inside a phase or before it (the phases
// after it run no iterations).
std::vector<PhaseIterations> phase_iterations(const std::vector<BatchPhase>& phases,
                                              double total_samples);

// The batch sizes whose steps are simulated: every distinct one up to `most`, else `most`
// of them spread evenly over the range, the smallest and largest included.
std::vector<int64_t> simulated_batches(const std::vector<BatchPhase>& phases, int most);
inline constexpr int kMostSimulatedPhases = 3;

// The step time at `global_batch` from the simulated ones: linear between the nearest two
// (a step's time is affine in its micro-batches per replica: a pipeline's fill and drain
// and the gradient reduction are fixed, each further micro-batch adds its passes).
double interpolated_step(const std::map<int64_t, double>& simulated, int64_t global_batch);

}  // namespace dtsim::models
