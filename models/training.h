// The training set-up: batch, sequence, precision, optimizer, recomputation, and how much
// data a whole run sees (for time-to-train).
#pragma once

#include <cstdint>
#include <optional>

#include "models/precision.h"

namespace dtsim::models {

struct TrainingSetup {
  int64_t global_batch = 0;  // samples per iteration over all data-parallel replicas
  int64_t micro_batch = 1;   // samples per micro-batch per replica
  int64_t seq_len = 0;       // 0 = the model's default
  Precision precision = Precision::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  Recompute recompute = Recompute::kNone;
  bool flash_attention = false;  // WorkloadShape::flash_attention
  // For time-to-train: total tokens, or a dataset of `dataset_samples` seen `epochs` times,
  // or a fixed number of iterations. At most one of these is set.
  std::optional<double> total_tokens;
  std::optional<int64_t> dataset_samples;
  double epochs = 1;
  std::optional<int64_t> iterations;
};

}  // namespace dtsim::models
