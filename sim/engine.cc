// Engine loop: the earliest of the next timed event and the next model completion wins.
#include "sim/engine.h"

#include <chrono>

#include "sim/check.h"

namespace dtsim {

EventId Engine::reserve_slot(Time t) {
  DTSIM_CHECK(t >= now_, "event scheduled in the past");
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = num_slots_++;
    if ((slot >> kChunkBits) == chunks_.size()) {
      chunks_.push_back(std::make_unique<Slot[]>(size_t{1} << kChunkBits));
    }
  }
  Slot& s = this->slot(slot);
  const uint64_t generation = ++s.generation;
  s.live = true;
  queue_.push(EventQueue::Key{t.count_ns(), slot});
  ++live_events_;
  return EventId{generation, slot};
}

void Engine::cancel(EventId id) {
  if (id.slot >= num_slots_) return;
  Slot& s = slot(id.slot);
  if (s.generation != id.generation || !s.live) return;
  s.live = false;
  s.callback.reset();
  --live_events_;
  queue_.note_dead();
  // The key stays queued until it is reached and dropped; the slot is released then.
}

Time Engine::next_event_time() {
  const int64_t t = queue_.peek_time([this](uint32_t s) { return live(s); },
                                     [this](uint32_t s) { release(s); });
  return t == INT64_MAX ? Time::infinite() : Time::ns(t);
}

Time Engine::horizon_excluding(const ResourceModel* self) {
  Time t = next_event_time();
  for (ResourceModel* m : models_) {
    if (m != self) t = std::min(t, m->next_completion());
  }
  return t;
}

void Engine::run_due_events() {
  auto is_live = [this](uint32_t s) { return live(s); };
  auto drop = [this](uint32_t s) { release(s); };
  while (queue_.peek_time(is_live, drop) == now_.count_ns()) {
    const EventQueue::Key k = queue_.pop(is_live, drop);
    // With many events pending their slots are out of cache: fetch the next one's while
    // this one runs.
    if (const uint32_t next = queue_.likely_next_slot(); next < num_slots_) {
      __builtin_prefetch(&slot(next));
    }
    Slot& s = slot(k.slot);
    s.live = false;  // running: no longer cancellable
    --live_events_;
    ++events_processed_;
    // Run in place; the slot is freed only afterwards, so nothing scheduled meanwhile can
    // take it.
    s.callback();
    s.callback.reset();
    free_slots_.push_back(k.slot);
  }
}

Time Engine::run(Time until, const std::function<bool()>& poll, uint64_t poll_every) {
  using Clock = std::chrono::steady_clock;
  // A stop must not wait for poll_every instants when each is slow (a large max-min solve):
  // the clock is read every 64 instants, and the poll also runs once 50 ms have passed.
  constexpr uint64_t kClockEvery = 64;
  constexpr auto kPollInterval = std::chrono::milliseconds(50);
  Time last = now_;
  uint64_t polled_at = instants_;
  auto polled_time = Clock::now();
  while (true) {
    const Time event_t = next_event_time();
    Time model_t = Time::infinite();
    for (ResourceModel* m : models_) model_t = std::min(model_t, m->next_completion());
    const Time t = std::min(event_t, model_t);
    if (t.is_infinite() || t > until) break;
    if (poll) {
      const uint64_t since = instants_ - polled_at;
      bool due = since >= poll_every;
      if (!due && since > 0 && since % kClockEvery == 0)
        due = Clock::now() - polled_time >= kPollInterval;
      if (due) {
        polled_at = instants_;
        polled_time = Clock::now();
        if (poll()) {
          stopped_ = true;
          break;
        }
      }
    }
    DTSIM_CHECK(t >= now_, "time went backwards");
    now_ = last = t;
    ++instants_;
    // Events first (including those they schedule for now), then model completions; the
    // next turn of the loop picks up whatever those schedule for the same instant.
    if (event_t == t) run_due_events();
    if (model_t == t) {
      for (ResourceModel* m : models_) {
        if (m->next_completion() == t) m->complete_due(t);
      }
    }
  }
  return last;
}

}  // namespace dtsim
