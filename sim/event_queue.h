// The engine's pending-event queue: a timing wheel for about the next millisecond and a
// radix heap beyond it; FIFO among equal times.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/radix_heap.h"

namespace dtsim {

// Near keys (within one wheel span of the last pop) go to a wheel of kSlots slots of
// 2^kShift ns each: a push is an append and a bit set, a pop a bitmap scan and a short
// slot scan, and no key ever moves. Far keys go to a radix heap (radix_heap.h). A pop takes
// the earlier of the two heads.
//
// Why order holds:
//  - The wheel's window starts at the slot of the last pop and spans kSlots slots. A key
//    enters the wheel only if it falls in the window at push time; windows only move
//    forward, and live keys are never earlier than the last pop, so every live wheel key
//    lies in the current window: scanning slots cyclically from the last pop's slot visits
//    them in time order. Within a slot, the first key of the smallest time is the oldest
//    (keys are appended in push order).
//  - Equal times in both structures: the far key was pushed when the window ended at or
//    before its time, the wheel key when the window ended after it, so the far key is the
//    older one and leaves first.
//
// Liveness is the owner's, as for RadixHeap: `is_live(slot)` is consulted (only while dead
// keys are queued), and each dead key that leaves is handed to `drop(slot)`.
class EventQueue {
 public:
  using Key = RadixHeap::Key;

  void push(Key k);
  // A queued key became dead (its event was cancelled).
  void note_dead() {
    ++dead_;
    wheel_cached_ = false;
    far_cached_ = false;
    far_.invalidate();
  }
  // Time of the earliest live key, or INT64_MAX when none.
  template <typename IsLive, typename Drop>
  int64_t peek_time(IsLive&& is_live, Drop&& drop);
  // Removes and returns the earliest live key; call only when peek_time() returned a time.
  template <typename IsLive, typename Drop>
  Key pop(IsLive&& is_live, Drop&& drop);

 private:
  static constexpr int kShift = 8;     // 256 ns per slot
  static constexpr int kSlots = 4096;  // the wheel spans 1.048576 ms
  static constexpr int kWords = kSlots / 64;
  static constexpr int64_t kSpan = int64_t{kSlots} << kShift;

  static int slot_of(int64_t t) { return static_cast<int>((t >> kShift) & (kSlots - 1)); }
  int64_t window_start() const { return (last_ >> kShift) << kShift; }
  void mark(int s) { occupied_[s / 64] |= uint64_t{1} << (s % 64); }
  void unmark(int s) { occupied_[s / 64] &= ~(uint64_t{1} << (s % 64)); }
  // First occupied slot at or after `from`, cyclically; -1 when the wheel is empty.
  int next_occupied(int from) const;
  // Makes sure the wheel's earliest live key is cached (the check is inline; the search,
  // which also drops dead keys, is not).
  template <typename IsLive, typename Drop>
  void find_wheel_min(IsLive&& is_live, Drop&& drop) {
    if (wheel_cached_) return;
    if (dead_ > 0) {
      search_wheel_min(is_live, drop);
      return;
    }
    // No dead keys: the first occupied slot holds the minimum.
    cache_slot_min(next_occupied(slot_of(last_)));
  }
  // Caches the earliest key of slot s (the first of equal times: the oldest), or an empty
  // wheel when s < 0.
  void cache_slot_min(int s) {
    wheel_cached_ = true;
    if (s < 0) {
      wheel_slot_ = -1;
      wheel_time_ = INT64_MAX;
      return;
    }
    const auto& keys = slots_[s];
    size_t best = 0;
    for (size_t i = 1; i < keys.size(); ++i) {
      if (keys[i].time < keys[best].time) best = i;
    }
    wheel_slot_ = s;
    wheel_index_ = best;
    wheel_time_ = keys[best].time;
  }
  // The same with dead keys queued: checks liveness and drops dead keys on the way.
  template <typename IsLive, typename Drop>
  void search_wheel_min(IsLive&& is_live, Drop&& drop);

  std::array<std::vector<Key>, kSlots> slots_;
  std::array<uint64_t, kWords> occupied_{};
  size_t dead_ = 0;  // dead keys queued, in either structure
  RadixHeap far_{&dead_};
  int64_t last_ = 0;  // time of the last pop
  // The far heap's earliest time, cached: most of the time it is empty.
  template <typename IsLive, typename Drop>
  int64_t far_time(IsLive&& is_live, Drop&& drop) {
    if (!far_cached_) {
      far_time_ = far_.peek_time(is_live, drop);
      far_cached_ = true;
    }
    return far_time_;
  }
  bool far_cached_ = true;
  int64_t far_time_ = INT64_MAX;
  bool wheel_cached_ = false;
  int wheel_slot_ = -1;  // slot of the cached minimum, -1 when the wheel is empty
  size_t wheel_index_ = 0;
  int64_t wheel_time_ = INT64_MAX;
};

inline void EventQueue::push(Key k) {
  if (k.time >= window_start() + kSpan) {
    far_.push(k);
    if (far_cached_ && k.time < far_time_) far_time_ = k.time;  // equal: older key stays first
    return;
  }
  const int s = slot_of(k.time);
  slots_[s].push_back(k);
  mark(s);
  // A strictly earlier key is the new minimum; an equal one is younger and waits.
  if (wheel_cached_ && k.time < wheel_time_) {
    wheel_slot_ = s;
    wheel_index_ = slots_[s].size() - 1;
    wheel_time_ = k.time;
  }
}

inline int EventQueue::next_occupied(int from) const {
  const int first_word = from / 64;
  uint64_t bits = occupied_[first_word] & (~uint64_t{0} << (from % 64));
  for (int i = 0; i <= kWords; ++i) {
    const int w = (first_word + i) % kWords;
    if (i > 0) bits = occupied_[w];
    if (i == kWords) bits &= ~(~uint64_t{0} << (from % 64));  // the part skipped at first
    if (bits != 0) return w * 64 + __builtin_ctzll(bits);
  }
  return -1;
}

template <typename IsLive, typename Drop>
void EventQueue::search_wheel_min(IsLive&& is_live, Drop&& drop) {
  for (int s = next_occupied(slot_of(last_)); s >= 0; s = next_occupied(s)) {
    auto& keys = slots_[s];
    if (dead_ > 0) {
      // Drop dead keys, keeping the order of the rest.
      size_t kept = 0;
      for (const Key& k : keys) {
        if (is_live(k.slot)) {
          keys[kept++] = k;
        } else {
          --dead_;
          drop(k.slot);
        }
      }
      keys.resize(kept);
      if (keys.empty()) {
        unmark(s);
        continue;
      }
    }
    cache_slot_min(s);
    return;
  }
  cache_slot_min(-1);
}

template <typename IsLive, typename Drop>
int64_t EventQueue::peek_time(IsLive&& is_live, Drop&& drop) {
  find_wheel_min(is_live, drop);
  auto counted_drop = [&](uint32_t slot) {
    --dead_;
    drop(slot);
  };
  return std::min(wheel_time_, far_time(is_live, counted_drop));
}

template <typename IsLive, typename Drop>
EventQueue::Key EventQueue::pop(IsLive&& is_live, Drop&& drop) {
  find_wheel_min(is_live, drop);
  auto counted_drop = [&](uint32_t slot) {
    --dead_;
    drop(slot);
  };
  Key k;
  if (far_time(is_live, counted_drop) <= wheel_time_) {
    k = far_.pop(is_live, counted_drop);
    far_cached_ = false;
  } else {
    auto& keys = slots_[wheel_slot_];
    k = keys[wheel_index_];
    keys.erase(keys.begin() + static_cast<std::ptrdiff_t>(wheel_index_));
    if (keys.empty()) unmark(wheel_slot_);
    wheel_cached_ = false;
  }
  last_ = k.time;
  return k;
}

}  // namespace dtsim
