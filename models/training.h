// The training set-up: batch, sequence, precision, optimizer, recomputation, and how much
// data a whole run sees (for time-to-train).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "models/batch_schedule.h"
#include "models/precision.h"
#include "models/recompute.h"
#include "models/training_run.h"

namespace dtsim::models {

struct TrainingSetup {
  int64_t global_batch = 0;  // samples per iteration over all data-parallel replicas
  int64_t micro_batch = 1;   // samples per micro-batch per replica
  int64_t seq_len = 0;       // 0 = the model's default
  Precision precision = Precision::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  Recompute recompute = Recompute::kNone;
  // Under selective recomputation: the modules it reruns (default: the attention core).
  RecomputeModules recompute_modules = module_bit(RecomputeModule::kCoreAttn);
  // Under full recomputation: Megatron-LM's --recompute-method and --recompute-num-layers.
  RecomputeMethod recompute_method = RecomputeMethod::kUniform;
  int recompute_num_layers = 1;
  // Activation offload to host memory over PCIe: RecomputePolicy::offload_layers.
  int offload_layers = 0;
  RecomputePolicy recompute_policy() const {
    RecomputePolicy p{recompute, recompute_modules};
    p.method = recompute_method;
    p.num_layers = recompute_num_layers;
    p.offload_layers = offload_layers;
    return p;
  }
  bool flash_attention = false;  // WorkloadShape::flash_attention
  // MoE routing. Drop-less routing (Megatron-LM's default) gives each rank of the expert-
  // parallel group the tokens its experts are picked for: the busiest rank gets
  // `expert_load_imbalance` times the mean (1: even), and the group waits for it. A capacity
  // factor (> 0; Megatron's --moe-expert-capacity-factor) drops the tokens beyond that many
  // times an expert's mean share, which caps the load.
  double expert_load_imbalance = 1;
  double expert_capacity_factor = 0;
  // The busiest rank's rows over the mean in an expert-parallel group of `ep`: at ep 1 one
  // rank holds every expert and gets every routed row, and no rank can get more than all
  // ep ranks' rows.
  double expert_load(int ep) const {
    if (ep <= 1) return 1;
    const double load = expert_capacity_factor > 0
                            ? std::min(expert_load_imbalance, expert_capacity_factor)
                            : expert_load_imbalance;
    return std::min(load, static_cast<double>(ep));
  }
  // Smaller global batches the run starts with, in order, before global_batch for the rest
  // (training.batch_phases, or Megatron-LM's ramp-up); a run's length in samples or tokens
  // then counts them.
  std::vector<BatchPhase> batch_phases;
  // For time-to-train: total tokens, or a dataset of `dataset_samples` seen `epochs` times,
  // or a fixed number of iterations. At most one of these is set.
  std::optional<double> total_tokens;
  std::optional<int64_t> dataset_samples;
  double epochs = 1;
  std::optional<int64_t> iterations;
  // The samples a run of total_tokens (at `tokens_per_sample`) or of dataset_samples x
  // epochs sees; none when its length is given in iterations or not at all.
  std::optional<double> samples_to_train(int64_t tokens_per_sample) const {
    if (total_tokens)
      return *total_tokens / static_cast<double>(std::max<int64_t>(tokens_per_sample, 1));
    if (dataset_samples) return static_cast<double>(*dataset_samples) * epochs;
    return std::nullopt;
  }
  // The rest of a whole run (evaluation, checkpoints, input pipeline, start-up).
  RunSetup run;
};

}  // namespace dtsim::models
