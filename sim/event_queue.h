// The engine's pending-event queue: a timing wheel for about the next millisecond and a
// radix heap beyond it; FIFO among equal times.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "sim/radix_heap.h"

namespace dtsim {

// Near keys (within one wheel span of the last pop) go to a wheel of kSlots slots of
// 2^kShift ns each: a push is an append and a bit set, and no key ever moves to another
// slot. Far keys go to a radix heap (radix_heap.h). A pop takes the earlier of the two
// heads.
//
// The slot that holds the wheel's minimum is the active slot: when it becomes so, its keys
// are sorted once (stably, by time), and pops then take them from the front with a cursor;
// a key pushed into it meanwhile is inserted in order. With many pending events a slot
// holds dozens of keys, and a scan for the minimum at every pop (and an erase from the
// middle) cost more than the rest of the engine together.
//
// Why order holds:
//  - The wheel's window starts at the slot of the last pop and spans kSlots slots. A key
//    enters the wheel only if it falls in the window at push time; windows only move
//    forward, and live keys are never earlier than the last pop, so every live wheel key
//    lies in the current window: scanning slots cyclically from the last pop's slot visits
//    them in time order. Within a slot, keys are appended in push order and the active
//    slot's are sorted stably and inserted after equal times, so the first key of the
//    smallest time is the oldest.
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
  // The slot of the wheel key after the last one popped from it (perhaps dead, perhaps not
  // the next to leave), or UINT32_MAX: for the owner to fetch its event ahead of time.
  uint32_t likely_next_slot() const {
    if (active_ < 0 || head_ >= slots_[active_].size()) return UINT32_MAX;
    return slots_[active_][head_].slot;
  }

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
  // Makes slot s the active one (sorted from head_ on); the slot active before keeps its
  // unconsumed keys, still in order.
  void activate(int s);
  // Makes sure the wheel's earliest live key is cached (the check is inline; the search,
  // which also drops dead keys, is not).
  template <typename IsLive, typename Drop>
  void find_wheel_min(IsLive&& is_live, Drop&& drop) {
    if (wheel_cached_) return;
    if (dead_ > 0) {
      search_wheel_min(is_live, drop);
      return;
    }
    // No dead keys: the first occupied slot holds the minimum, at its front once active.
    cache_slot_min(next_occupied(slot_of(last_)));
  }
  // Activates slot s and caches its first key, or an empty wheel when s < 0.
  void cache_slot_min(int s) {
    wheel_cached_ = true;
    if (s < 0) {
      wheel_time_ = INT64_MAX;
      return;
    }
    activate(s);
    wheel_time_ = slots_[s][head_].time;
  }
  // The same with dead keys queued: checks liveness and drops dead keys on the way.
  template <typename IsLive, typename Drop>
  void search_wheel_min(IsLive&& is_live, Drop&& drop);

  std::array<std::vector<Key>, kSlots> slots_;
  std::array<uint64_t, kWords> occupied_{};
  int active_ = -1;  // the active slot, -1 when none
  size_t head_ = 0;  // the active slot's keys before head_ have left
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
  // The wheel's earliest time, cached; when it is finite it is the active slot's front.
  bool wheel_cached_ = false;
  int64_t wheel_time_ = INT64_MAX;
};

inline void EventQueue::push(Key k) {
  if (k.time >= window_start() + kSpan) {
    far_.push(k);
    if (far_cached_ && k.time < far_time_) far_time_ = k.time;  // equal: older key stays first
    return;
  }
  const int s = slot_of(k.time);
  auto& keys = slots_[s];
  if (s == active_) {
    // After the keys of equal time: they are older.
    const auto at = std::upper_bound(keys.begin() + static_cast<std::ptrdiff_t>(head_), keys.end(),
                                     k.time, [](int64_t t, const Key& x) { return t < x.time; });
    keys.insert(at, k);
    // A strictly earlier key is now the front, and the cached minimum.
    if (wheel_cached_ && k.time < wheel_time_) wheel_time_ = k.time;
    return;
  }
  keys.push_back(k);
  mark(s);
  // A strictly earlier key elsewhere makes another slot the first: find it again.
  if (wheel_cached_ && k.time < wheel_time_) wheel_cached_ = false;
}

inline void EventQueue::activate(int s) {
  if (s == active_) return;
  if (active_ >= 0) {
    auto& old = slots_[active_];
    old.erase(old.begin(), old.begin() + static_cast<std::ptrdiff_t>(head_));
  }
  auto& keys = slots_[s];
  // A few keys: an insertion sort, in place (std::stable_sort allocates a buffer).
  if (keys.size() <= 64) {
    for (size_t i = 1; i < keys.size(); ++i) {
      const Key k = keys[i];
      size_t j = i;
      for (; j > 0 && keys[j - 1].time > k.time; --j) keys[j] = keys[j - 1];
      keys[j] = k;
    }
  } else {
    std::stable_sort(keys.begin(), keys.end(),
                     [](const Key& a, const Key& b) { return a.time < b.time; });
  }
  active_ = s;
  head_ = 0;
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
    if (s == active_) {
      // Sorted: dead keys at its front leave, the first live one is the minimum.
      while (head_ < keys.size() && !is_live(keys[head_].slot)) {
        --dead_;
        drop(keys[head_++].slot);
      }
      if (head_ < keys.size()) {
        wheel_cached_ = true;
        wheel_time_ = keys[head_].time;
        return;
      }
      keys.clear();
      active_ = -1;
      head_ = 0;
    } else {
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
      if (!keys.empty()) {
        cache_slot_min(s);
        return;
      }
    }
    unmark(s);
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
    auto& keys = slots_[active_];
    k = keys[head_++];
    if (head_ == keys.size()) {
      keys.clear();
      unmark(active_);
      active_ = -1;
      head_ = 0;
      wheel_cached_ = false;
    } else if (dead_ > 0) {
      wheel_cached_ = false;  // the next key may be dead
    } else {
      wheel_time_ = keys[head_].time;  // the next key of the sorted slot
    }
  }
  last_ = k.time;
  return k;
}

}  // namespace dtsim
