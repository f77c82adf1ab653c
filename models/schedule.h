// Pipeline schedules: the order in which one stage runs the forward and backward passes of
// its micro-batches (GPipe, 1F1B, interleaved 1F1B with virtual stages).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace dtsim::models {

enum class PipelineSchedule { kGpipe, k1F1B, kInterleaved1F1B };
std::string_view schedule_name(PipelineSchedule s);
std::optional<PipelineSchedule> schedule_from_name(std::string_view name);
std::string_view schedule_description(PipelineSchedule s);
inline constexpr PipelineSchedule kAllSchedules[] = {
    PipelineSchedule::kGpipe, PipelineSchedule::k1F1B, PipelineSchedule::kInterleaved1F1B};

struct PipeStep {
  bool forward = true;
  int micro_batch = 0;
  // Which of the stage's model chunks (0 .. virtual_stages - 1). With v chunks, stage s
  // holds virtual stages s, s + p, s + 2p, ... (Megatron-LM's interleaving).
  int chunk = 0;
  bool operator==(const PipeStep&) const = default;
};

// The order of one stage's steps. Every (micro_batch, chunk) appears once forward and once
// backward. Throws std::invalid_argument when the combination is impossible (stages < 1,
// micro_batches < 1, virtual_stages > 1 without the interleaved schedule, or interleaved
// with micro_batches not a multiple of stages, as Megatron-LM requires).
std::vector<PipeStep> pipeline_order(PipelineSchedule schedule, int stage, int stages,
                                     int micro_batches, int virtual_stages = 1);

// The ideal bubble fraction (bubble time over ideal compute time) with equal forward and
// backward times per chunk and free communication: (p - 1) / m, divided by v when
// interleaved (Narayanan et al. 2021).
double ideal_bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                             int virtual_stages = 1);

// The most micro-batches whose activations one stage holds at once, counted in chunks of
// micro-batch (a stage with v chunks holding one micro-batch of each counts v): GPipe holds
// all m; 1F1B holds p - stage; interleaved holds what its warm-up issues.
int peak_in_flight_chunks(PipelineSchedule schedule, int stage, int stages, int micro_batches,
                          int virtual_stages = 1);

// The makespan of the schedule when every forward of a chunk takes `fwd` and every
// backward `bwd`, with free communication: the dependency-respecting replay of
// pipeline_order over all stages. Used to check schedules and for quick estimates.
double schedule_makespan(PipelineSchedule schedule, int stages, int micro_batches,
                         int virtual_stages, double fwd, double bwd);
// The same with virtual stage k (chunk * stages + stage) taking fwd[k] and bwd[k]: how
// long a pipeline of uneven stages takes. Throws std::invalid_argument when the sizes or
// times are wrong.
double schedule_makespan(PipelineSchedule schedule, int stages, int micro_batches,
                         int virtual_stages, const std::vector<double>& fwd,
                         const std::vector<double>& bwd);

}  // namespace dtsim::models
