// A whole training run for time-to-train figures: the steps, and the parts of a run that a
// published "N epochs in M minutes" contains besides them (start-up, evaluation passes,
// checkpoint writes, an input pipeline slower than the step), each from its own inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/units.h"

namespace dtsim::models {

struct RunSetup {
  // Before the first step: process launch, communicator set-up, loading (given: no
  // sourced figure fits every system).
  Duration startup;
  // A checkpoint every `checkpoint_every` iterations (0: none), written by every node in
  // parallel (Megatron-LM's fully parallel save) at `checkpoint_write_bandwidth` each.
  int64_t checkpoint_every = 0;
  Bandwidth checkpoint_write_bandwidth;
  // An evaluation pass over `eval_samples` samples every `eval_every` iterations (0: none).
  int64_t eval_every = 0;
  int64_t eval_samples = 0;
  // The host's input pipeline (decode and augmentation): samples a second per core times
  // the cores a node gives it, or a node's rate outright (decoding on the GPU); 0 = not
  // bounded. Prefetching overlaps it with the step, so a step takes the longer of the two.
  double input_samples_per_s_per_core = 0;
  int input_cores_per_node = 0;
  double input_samples_per_s_per_node = 0;
  double input_rate_per_node() const {
    return input_samples_per_s_per_node > 0
               ? input_samples_per_s_per_node
               : input_samples_per_s_per_core * static_cast<double>(input_cores_per_node);
  }
};

// The run's time, part by part (seconds).
struct RunParts {
  double steps = 0;       // iterations x the simulated step (each phase's, then the main one)
  double input_wait = 0;  // beyond the steps, waiting for the input pipeline
  double eval = 0;
  double checkpoint = 0;
  double startup = 0;
  bool input_bound = false;
  double total() const { return steps + input_wait + eval + checkpoint + startup; }
};

struct RunStep {
  double iterations = 0;
  double iteration_s = 0;
  double samples_per_iteration = 0;
  // A batch-size schedule's phases before those iterations, each with its own step.
  struct Phase {
    double iterations = 0;
    double iteration_s = 0;
    double samples_per_iteration = 0;
  };
  std::vector<Phase> phases;
  int nodes = 1;
  // One checkpoint's bytes: every parameter's weights and optimizer states, once.
  double checkpoint_bytes = 0;
  // An evaluation sample's forward pass: the step's time per sample times the forward's
  // share of the step's FLOPs (the forward runs at the step's efficiency).
  double eval_s_per_sample = 0;
};

RunParts training_run_parts(const RunSetup& run, const RunStep& step);

struct Workload;
struct RecomputePolicy;
// The forward pass's share of a step's FLOPs: forward / (forward + backward + what
// recomputation runs again).
double forward_share(const Workload& w, const RecomputePolicy& recompute);

}  // namespace dtsim::models
