// Engine loop: the earliest of the next timed event and the next model completion wins.
#include "sim/engine.h"

#include "sim/check.h"

namespace dtsim {

EventId Engine::schedule_at(Time t, Callback cb) {
  DTSIM_CHECK(t >= now_, "event scheduled in the past");
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  const uint64_t seq = next_seq_++;
  slots_[slot].seq = seq;
  slots_[slot].cb = std::move(cb);
  heap_push(Key{t.count_ns(), seq, slot});
  ++live_events_;
  return EventId{seq, slot};
}

void Engine::cancel(EventId id) {
  if (id.slot >= slots_.size() || slots_[id.slot].seq != id.seq || id.seq == 0) return;
  slots_[id.slot].seq = 0;
  slots_[id.slot].cb = nullptr;
  --live_events_;
  // The heap key stays until it reaches the top; the slot is freed then.
}

void Engine::heap_push(Key k) {
  size_t i = heap_.size();
  heap_.push_back(k);
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!k.before(heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = k;
}

Engine::Key Engine::heap_pop() {
  const Key top = heap_.front();
  const Key last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n == 0) return top;
  size_t i = 0;
  while (true) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t end = first + 4 < n ? first + 4 : n;
    for (size_t c = first + 1; c < end; ++c) {
      if (heap_[c].before(heap_[best])) best = c;
    }
    if (!heap_[best].before(last)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
  return top;
}

void Engine::drop_dead_top() {
  while (!heap_.empty() && slots_[heap_.front().slot].seq != heap_.front().seq) {
    free_slots_.push_back(heap_pop().slot);
  }
}

Time Engine::next_event_time() {
  drop_dead_top();
  return heap_.empty() ? Time::infinite() : Time::ns(heap_.front().time_ns);
}

Time Engine::horizon_excluding(const ResourceModel* self) {
  Time t = next_event_time();
  for (ResourceModel* m : models_) {
    if (m != self) t = std::min(t, m->next_completion());
  }
  return t;
}

void Engine::run_due_events() {
  while (true) {
    drop_dead_top();
    if (heap_.empty() || heap_.front().time_ns != now_.count_ns()) return;
    const Key k = heap_pop();
    Slot& s = slots_[k.slot];
    Callback cb = std::move(s.cb);
    s.seq = 0;
    s.cb = nullptr;
    free_slots_.push_back(k.slot);
    --live_events_;
    ++events_processed_;
    cb();
  }
}

Time Engine::run(Time until) {
  Time last = now_;
  while (true) {
    run_due_events();
    Time t = next_event_time();
    Time model_t = Time::infinite();
    for (ResourceModel* m : models_) model_t = std::min(model_t, m->next_completion());
    t = std::min(t, model_t);
    if (t.is_infinite() || t > until) break;
    DTSIM_CHECK(t >= now_, "time went backwards");
    now_ = t;
    last = t;
    run_due_events();
    if (model_t == t) {
      for (ResourceModel* m : models_) {
        if (m->next_completion() == t) m->complete_due(t);
      }
    }
  }
  return last;
}

}  // namespace dtsim
