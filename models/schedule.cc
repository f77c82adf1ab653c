// Pipeline schedules: GPipe (Huang et al. 2019), 1F1B / PipeDream-Flush (Narayanan et al.
// 2021) and interleaved 1F1B (Narayanan et al. SC'21), as Megatron-LM orders them.
#include "models/schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::models {

namespace {

struct ScheduleInfo {
  PipelineSchedule schedule;
  std::string_view name;
  std::string_view description;
};

constexpr ScheduleInfo kScheduleInfo[] = {
    {PipelineSchedule::kGpipe, "gpipe",
     "all forward passes, then all backward passes (GPipe, Huang et al. 2019)"},
    {PipelineSchedule::k1F1B, "1f1b",
     "one forward, one backward after a warm-up of p - stage - 1 forwards (PipeDream-Flush, "
     "Narayanan et al. 2021)"},
    {PipelineSchedule::kInterleaved1F1B, "interleaved_1f1b",
     "1F1B over v model chunks per stage, the bubble divided by v (Megatron-LM, Narayanan et "
     "al. SC'21)"},
};

const ScheduleInfo& info(PipelineSchedule s) {
  for (const ScheduleInfo& i : kScheduleInfo) {
    if (i.schedule == s) return i;
  }
  throw std::invalid_argument("unknown pipeline schedule " + std::to_string(static_cast<int>(s)));
}

void validate(PipelineSchedule schedule, int stages, int micro_batches, int virtual_stages) {
  if (stages < 1) {
    throw std::invalid_argument("pipeline stages must be at least 1, got " +
                                std::to_string(stages));
  }
  if (micro_batches < 1) {
    throw std::invalid_argument("micro-batches must be at least 1, got " +
                                std::to_string(micro_batches));
  }
  if (virtual_stages < 1) {
    throw std::invalid_argument("virtual pipeline stages must be at least 1, got " +
                                std::to_string(virtual_stages));
  }
  if (virtual_stages > 1 && schedule != PipelineSchedule::kInterleaved1F1B) {
    throw std::invalid_argument(std::string(schedule_name(schedule)) + " schedule runs one " +
                                "model chunk per stage, got " + std::to_string(virtual_stages) +
                                " virtual stages (use interleaved_1f1b)");
  }
  // Megatron-LM asserts this: its chunk of a virtual micro-batch assumes whole groups of p.
  if (virtual_stages > 1 && micro_batches % stages != 0) {
    throw std::invalid_argument("interleaved_1f1b needs micro-batches (" +
                                std::to_string(micro_batches) + ") divisible by pipeline stages (" +
                                std::to_string(stages) + "), as Megatron-LM requires");
  }
}

void validate_stage(int stage, int stages) {
  if (stage < 0 || stage >= stages) {
    throw std::invalid_argument("pipeline stage " + std::to_string(stage) + " out of range [0, " +
                                std::to_string(stages) + ")");
  }
}

// GPipe runs backward in reverse micro-batch order (m-1 .. 0), as in the paper's figure 2:
// the autograd of the concatenated micro-batches starts from the last one computed.
std::vector<PipeStep> gpipe_order(int micro_batches) {
  std::vector<PipeStep> order;
  for (int mb = 0; mb < micro_batches; ++mb) order.push_back({true, mb, 0});
  for (int mb = micro_batches - 1; mb >= 0; --mb) order.push_back({false, mb, 0});
  return order;
}

// Megatron-LM's forward_backward_pipelining_without_interleaving: warm-up forwards, then
// pairs of one forward and one backward, then the cool-down backwards.
std::vector<PipeStep> one_f_one_b_order(int stage, int stages, int micro_batches) {
  const int warmup = std::min(stages - stage - 1, micro_batches);
  const int remaining = micro_batches - warmup;
  std::vector<PipeStep> order;
  for (int mb = 0; mb < warmup; ++mb) order.push_back({true, mb, 0});
  for (int i = 0; i < remaining; ++i) {
    order.push_back({true, warmup + i, 0});
    order.push_back({false, i, 0});
  }
  for (int i = 0; i < warmup; ++i) order.push_back({false, remaining + i, 0});
  return order;
}

// Megatron-LM's get_model_chunk_id plus the micro-batch it pops: virtual micro-batch k runs
// groups of p micro-batches per chunk, chunk after chunk; backward visits chunks in reverse.
PipeStep interleaved_step(int k, bool forward, int stages, int virtual_stages) {
  const int group = stages * virtual_stages;
  const int in_group = k % group;
  const int chunk = in_group / stages;
  const int micro_batch = (k / group) * stages + in_group % stages;
  return {forward, micro_batch, forward ? chunk : virtual_stages - 1 - chunk};
}

// Megatron-LM's warm-up: all of it when m == p, else (p - stage - 1) * 2 + (v - 1) * p.
int interleaved_warmup(int stage, int stages, int micro_batches, int virtual_stages) {
  const int total = micro_batches * virtual_stages;
  if (micro_batches == stages) return total;
  return std::min((stages - stage - 1) * 2 + (virtual_stages - 1) * stages, total);
}

// Megatron-LM's forward_backward_pipelining_with_interleaving.
std::vector<PipeStep> interleaved_order(int stage, int stages, int micro_batches,
                                        int virtual_stages) {
  const int total = micro_batches * virtual_stages;
  const int warmup = interleaved_warmup(stage, stages, micro_batches, virtual_stages);
  const int remaining = total - warmup;
  std::vector<PipeStep> order;
  for (int k = 0; k < warmup; ++k) {
    order.push_back(interleaved_step(k, true, stages, virtual_stages));
  }
  for (int k = 0; k < remaining; ++k) {
    order.push_back(interleaved_step(warmup + k, true, stages, virtual_stages));
    order.push_back(interleaved_step(k, false, stages, virtual_stages));
  }
  for (int k = remaining; k < total; ++k) {
    order.push_back(interleaved_step(k, false, stages, virtual_stages));
  }
  return order;
}

// Replays every stage's order: a step starts when its stage is free and the steps it
// depends on have finished.
class MakespanReplay {
 public:
  // fwd[k] and bwd[k]: virtual stage k = chunk * stages + stage.
  MakespanReplay(PipelineSchedule schedule, int stages, int micro_batches, int virtual_stages,
                 std::vector<double> fwd, std::vector<double> bwd)
      : p_(stages),
        m_(micro_batches),
        v_(virtual_stages),
        fwd_(std::move(fwd)),
        bwd_(std::move(bwd)),
        finish_(2 * static_cast<size_t>(p_) * static_cast<size_t>(v_) * static_cast<size_t>(m_),
                kPending) {
    for (int s = 0; s < p_; ++s) {
      orders_.push_back(pipeline_order(schedule, s, p_, m_, v_));
    }
  }

  double run() {
    std::vector<size_t> next(static_cast<size_t>(p_), 0);
    std::vector<double> free_at(static_cast<size_t>(p_), 0.0);
    size_t done = 0;
    const size_t all = finish_.size();
    double makespan = 0;
    while (done < all) {
      bool progressed = false;
      for (int s = 0; s < p_; ++s) {
        const auto si = static_cast<size_t>(s);
        while (next[si] < orders_[si].size()) {
          const PipeStep& step = orders_[si][next[si]];
          const double ready = dependencies_done_at(s, step);
          if (ready == kPending) break;
          const double start = std::max(ready, free_at[si]);
          const auto k = static_cast<size_t>(step.chunk * p_ + s);
          free_at[si] = start + (step.forward ? fwd_[k] : bwd_[k]);
          finish_[index(s, step)] = free_at[si];
          makespan = std::max(makespan, free_at[si]);
          ++next[si];
          ++done;
          progressed = true;
        }
      }
      if (!progressed) {
        throw std::logic_error("pipeline schedule deadlocks: no stage can run its next step");
      }
    }
    return makespan;
  }

 private:
  static constexpr double kPending = -1.0;

  size_t index(int stage, const PipeStep& step) const {
    const size_t direction = step.forward ? 0 : 1;
    const auto row = (static_cast<size_t>(stage) * 2 + direction) * static_cast<size_t>(v_) +
                     static_cast<size_t>(step.chunk);
    return row * static_cast<size_t>(m_) + static_cast<size_t>(step.micro_batch);
  }

  double finished(int stage, bool forward, int micro_batch, int chunk) const {
    return finish_[index(stage, {forward, micro_batch, chunk})];
  }

  // When the activation (forward) or gradient (backward) the step consumes is ready, or
  // kPending. Virtual stage c * p + s follows c * p + s - 1, wrapping from stage p - 1 of
  // chunk c - 1 to stage 0 of chunk c.
  double dependencies_done_at(int stage, const PipeStep& step) const {
    const int mb = step.micro_batch;
    const int c = step.chunk;
    if (step.forward) {
      if (stage > 0) return finished(stage - 1, true, mb, c);
      if (c > 0) return finished(p_ - 1, true, mb, c - 1);
      return 0.0;
    }
    double upstream = 0.0;
    if (stage < p_ - 1) {
      upstream = finished(stage + 1, false, mb, c);
    } else if (c < v_ - 1) {
      upstream = finished(0, false, mb, c + 1);
    }
    const double own_forward = finished(stage, true, mb, c);
    if (upstream == kPending || own_forward == kPending) return kPending;
    return std::max(upstream, own_forward);
  }

  int p_;
  int m_;
  int v_;
  std::vector<double> fwd_;
  std::vector<double> bwd_;
  std::vector<std::vector<PipeStep>> orders_;
  std::vector<double> finish_;
};

}  // namespace

std::string_view schedule_name(PipelineSchedule s) { return info(s).name; }

std::optional<PipelineSchedule> schedule_from_name(std::string_view name) {
  for (const ScheduleInfo& i : kScheduleInfo) {
    if (i.name == name) return i.schedule;
  }
  return std::nullopt;
}

std::string_view schedule_description(PipelineSchedule s) { return info(s).description; }

std::vector<PipeStep> pipeline_order(PipelineSchedule schedule, int stage, int stages,
                                     int micro_batches, int virtual_stages) {
  validate(schedule, stages, micro_batches, virtual_stages);
  validate_stage(stage, stages);
  switch (schedule) {
    case PipelineSchedule::kGpipe:
      return gpipe_order(micro_batches);
    case PipelineSchedule::k1F1B:
      return one_f_one_b_order(stage, stages, micro_batches);
    case PipelineSchedule::kInterleaved1F1B:
      // Megatron-LM runs the non-interleaved schedule without virtual stages.
      if (virtual_stages == 1) return one_f_one_b_order(stage, stages, micro_batches);
      return interleaved_order(stage, stages, micro_batches, virtual_stages);
  }
  throw std::invalid_argument("unknown pipeline schedule");
}

double ideal_bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                             int virtual_stages) {
  validate(schedule, stages, micro_batches, virtual_stages);
  return static_cast<double>(stages - 1) / (static_cast<double>(micro_batches) * virtual_stages);
}

int peak_in_flight_chunks(PipelineSchedule schedule, int stage, int stages, int micro_batches,
                          int virtual_stages) {
  int in_flight = 0;
  int peak = 0;
  for (const PipeStep& step :
       pipeline_order(schedule, stage, stages, micro_batches, virtual_stages)) {
    in_flight += step.forward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

double schedule_makespan(PipelineSchedule schedule, int stages, int micro_batches,
                         int virtual_stages, double fwd, double bwd) {
  validate(schedule, stages, micro_batches, virtual_stages);
  const auto chunks = static_cast<size_t>(stages) * static_cast<size_t>(virtual_stages);
  return schedule_makespan(schedule, stages, micro_batches, virtual_stages,
                           std::vector<double>(chunks, fwd), std::vector<double>(chunks, bwd));
}

double schedule_makespan(PipelineSchedule schedule, int stages, int micro_batches,
                         int virtual_stages, const std::vector<double>& fwd,
                         const std::vector<double>& bwd) {
  validate(schedule, stages, micro_batches, virtual_stages);
  const auto chunks = static_cast<size_t>(stages) * static_cast<size_t>(virtual_stages);
  if (fwd.size() != chunks || bwd.size() != chunks) {
    throw std::invalid_argument(std::to_string(fwd.size()) + " forward and " +
                                std::to_string(bwd.size()) + " backward times for " +
                                std::to_string(chunks) + " virtual stages");
  }
  for (size_t k = 0; k < chunks; ++k) {
    if (!(fwd[k] >= 0 && bwd[k] >= 0) || !std::isfinite(fwd[k]) || !std::isfinite(bwd[k])) {
      throw std::invalid_argument(
          "forward and backward times must be finite and non-negative, "
          "got " +
          std::to_string(fwd[k]) + " and " + std::to_string(bwd[k]));
    }
  }
  return MakespanReplay(schedule, stages, micro_batches, virtual_stages, fwd, bwd).run();
}

}  // namespace dtsim::models
