// The discrete-event engine: a time-ordered event queue plus the resource models it drives.
#pragma once

#include <cstdint>
#include <algorithm>
#include <functional>
#include <vector>

#include "sim/resource_model.h"
#include "sim/units.h"

namespace dtsim {

// Handle to a scheduled event; pass it to Engine::cancel.
struct EventId {
  uint64_t seq = 0;
  uint32_t slot = 0;
  friend bool operator==(EventId, EventId) = default;
};

// Ordering guarantee: events run in increasing time; events scheduled for the same time
// run in the order they were scheduled (key = time, sequence number), as in ns-3. At one
// instant, all pending events run first, then resource models finish what completes at
// that instant (so many actions started at one instant are settled together).
//
// Complexity: schedule O(log n), cancel O(1) (lazy: cancelled events are skipped when they
// reach the top), run loop O(log n) per event. The heap holds 24-byte keys (a 4-ary heap,
// for cache locality); callbacks live in a slab of reusable slots so they never move.
//
// There is no global state: every simulation owns its engine.
class Engine {
 public:
  using Callback = std::function<void()>;

  Time now() const { return now_; }
  EventId schedule_at(Time t, Callback cb);
  EventId schedule_after(Duration d, Callback cb) { return schedule_at(now_ + d, std::move(cb)); }
  // Cancelling an event that already ran or was cancelled is a no-op.
  void cancel(EventId id);

  // Models are polled in the order they were added; the engine does not own them.
  void add_model(ResourceModel* model) { models_.push_back(model); }

  // Runs until nothing is pending or the next thing would happen after `until`.
  // Returns the time of the last thing that happened.
  Time run(Time until = Time::infinite());

  // Earliest time at which a timed event is pending (infinite if none). Models use it to
  // know how far they may look ahead without anything else changing.
  Time next_event_time();
  // Like next_event_time(), but also the next completion of every model except `self`.
  Time horizon_excluding(const ResourceModel* self);

  uint64_t events_processed() const { return events_processed_; }
  size_t pending_events() const { return live_events_; }

 private:
  struct Key {
    int64_t time_ns;
    uint64_t seq;
    uint32_t slot;
    bool before(const Key& o) const {
      return time_ns != o.time_ns ? time_ns < o.time_ns : seq < o.seq;
    }
  };
  struct Slot {
    uint64_t seq = 0;  // 0 when free or cancelled
    Callback cb;
  };
  void heap_push(Key k);
  Key heap_pop();
  void drop_dead_top();
  // Runs every event scheduled for exactly now_ (including ones they schedule).
  void run_due_events();

  Time now_ = Time::zero();
  uint64_t next_seq_ = 1;
  uint64_t events_processed_ = 0;
  size_t live_events_ = 0;
  std::vector<Key> heap_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<ResourceModel*> models_;
};

}  // namespace dtsim
