// The discrete-event engine: a time-ordered event queue plus the resource models it drives.
#pragma once

#include <cstdint>
#include <memory>
#include <algorithm>
#include <functional>
#include <vector>

#include "sim/event_callback.h"
#include "sim/event_queue.h"
#include "sim/resource_model.h"
#include "sim/units.h"

namespace dtsim {

// Handle to a scheduled event; pass it to Engine::cancel.
struct EventId {
  uint64_t generation = 0;  // of the slot when the event was scheduled
  uint32_t slot = 0;
  friend bool operator==(EventId, EventId) = default;
};

// Ordering guarantee: events run in increasing time; events scheduled for the same time
// run in the order they were scheduled, as in ns-3 (the queue is FIFO among equal
// times). At one instant, all pending events run first, then resource models finish what
// completes at that instant (so many actions started at one instant are settled together).
//
// Complexity: schedule O(1), cancel O(1) (lazy: cancelled events are skipped when they
// are reached), run loop O(1) amortised per event (a timing wheel for the next millisecond
// and a radix heap beyond it, see event_queue.h). Callbacks live in place in chunks of
// reusable slots; the queue holds 16-byte keys.
//
// There is no global state: every simulation owns its engine.
class Engine {
 public:

  Time now() const { return now_; }
  // Callables are stored straight into the event's slot (no temporary std::function).
  template <typename F>
  EventId schedule_at(Time t, F&& callback) {
    const EventId id = reserve_slot(t);
    slot(id.slot).callback.emplace(std::forward<F>(callback));
    return id;
  }
  template <typename F>
  EventId schedule_after(Duration d, F&& callback) {
    return schedule_at(now_ + d, std::forward<F>(callback));
  }
  // Cancelling an event that already ran or was cancelled is a no-op.
  void cancel(EventId id);

  // Models are polled in the order they were added; the engine does not own them.
  void add_model(ResourceModel* model) { models_.push_back(model); }

  // Runs until nothing is pending or the next thing would happen after `until`.
  // Returns the time of the last thing that happened. With a `poll`, the engine calls it
  // before an instant (a time at which events run or models complete actions) once
  // `poll_every` instants have run since the last call, or 50 ms have passed (the clock is
  // read every 64 instants), and stops (stopped() turns true) when it returns true; a run
  // with nothing left to do ends without a poll.
  Time run(Time until = Time::infinite(), const std::function<bool()>& poll = {},
           uint64_t poll_every = 1 << 14);
  bool stopped() const { return stopped_; }
  // Instants the run loop has handled.
  uint64_t instants() const { return instants_; }

  // Earliest time at which a timed event is pending (infinite if none). Models use it to
  // know how far they may look ahead without anything else changing.
  Time next_event_time();
  // Like next_event_time(), but also the next completion of every model except `self`.
  Time horizon_excluding(const ResourceModel* self);

  uint64_t events_processed() const { return events_processed_; }
  size_t pending_events() const { return live_events_; }

 private:
  // Takes a free slot, queues the event's key and returns its id; the caller fills the slot.
  EventId reserve_slot(Time t);
  bool live(uint32_t s) const { return slot(s).live; }
  void release(uint32_t slot) { free_slots_.push_back(slot); }
  // Runs every event scheduled for exactly now_ (including ones they schedule).
  void run_due_events();

  Time now_ = Time::zero();
  bool stopped_ = false;
  uint64_t instants_ = 0;
  uint64_t events_processed_ = 0;
  size_t live_events_ = 0;
  EventQueue queue_;
  // One event's slot, one cache line: its callable; a generation counter, bumped each time
  // the slot takes a new event, so that a stale EventId cannot cancel a later event; and
  // whether the event is still due. Slots live in fixed chunks that never move, so that a
  // callback can run in place while it schedules events that add slots; a slot returns to
  // the free list only once its key has left the queue.
  struct alignas(64) Slot {
    EventCallback callback;
    uint64_t generation = 0;
    bool live = false;
  };
  static constexpr uint32_t kChunkBits = 10;
  Slot& slot(uint32_t i) { return chunks_[i >> kChunkBits][i & ((1U << kChunkBits) - 1)]; }
  const Slot& slot(uint32_t i) const { return chunks_[i >> kChunkBits][i & ((1U << kChunkBits) - 1)]; }
  uint32_t num_slots_ = 0;
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::vector<uint32_t> free_slots_;
  std::vector<ResourceModel*> models_;
};

}  // namespace dtsim
