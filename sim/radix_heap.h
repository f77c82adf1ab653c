// A radix heap (Ahuja, Mehlhorn, Orlin & Tarjan 1990) with radix 16 over integer event
// times, FIFO among equal times: the engine's queue for events beyond its timing wheel.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace dtsim {

// Keys are (time, slot); times never go below the time of the last pop (simulated time is
// monotone), which is what a radix heap needs. Bucket 0 holds keys whose time equals
// `last_`. Other keys sit in bucket 1 + 16 p + d, where p is the highest 4-bit digit in
// which their time differs from `last_` and d is their value of that digit: bucket order
// is key order. Popping refills bucket 0 from the lowest non-empty bucket; a key only
// ever moves to a lower digit position, so at most 16 times (about 5 for delays up to a
// millisecond): push O(1), pop O(1) amortised, no pointer chasing. Keys are appended in
// push order and buckets are redistributed in order, so keys of equal time leave in the
// order they were pushed.
//
// Liveness is decided by the owner (a cancelled event stays queued until it is reached):
// `is_live(slot)` is consulted by peek and pop, which skip dead keys; every dead key that
// leaves is handed to `drop(slot)` so that the owner can reuse its slot only then.
class RadixHeap {
 public:
  struct Key {
    int64_t time;
    uint32_t slot;
  };

  // `dead_keys` counts the dead keys its owner has queued (here or elsewhere).
  explicit RadixHeap(const size_t* dead_keys) : dead_(dead_keys) {}

  void push(Key k);
  // Some queued key (here or elsewhere in the owner) became dead: forget cached minima.
  void invalidate() { lowest_ = -1; }
  // Time of the earliest live key, or INT64_MAX when none.
  template <typename IsLive, typename Drop>
  int64_t peek_time(IsLive&& is_live, Drop&& drop);
  // Removes and returns the earliest live key; call only when peek_time() returned a time.
  template <typename IsLive, typename Drop>
  Key pop(IsLive&& is_live, Drop&& drop);

 private:
  static constexpr int kBuckets = 1 + 16 * 16;
  static constexpr std::array<int64_t, kBuckets> filled(int64_t v) {
    std::array<int64_t, kBuckets> a{};
    a.fill(v);
    return a;
  }
  static int bucket_of(int64_t time, int64_t last) {
    if (time == last) return 0;
    const int position = (63 - __builtin_clzll(static_cast<uint64_t>(time ^ last))) / 4;
    const int digit = static_cast<int>((static_cast<uint64_t>(time) >> (4 * position)) & 15);
    return 1 + 16 * position + digit;
  }
  void mark(int b) { occupied_[(b - 1) / 64] |= uint64_t{1} << ((b - 1) % 64); }
  void unmark(int b) { occupied_[(b - 1) / 64] &= ~(uint64_t{1} << ((b - 1) % 64)); }
  int first_occupied() const {
    for (int w = 0; w < 4; ++w) {
      if (occupied_[w] != 0) return 1 + 64 * w + __builtin_ctzll(occupied_[w]);
    }
    return -1;
  }
  template <typename IsLive, typename Drop>
  int lowest_live_bucket(IsLive&& is_live, Drop&& drop);
  template <typename Drop>
  void dropped(Drop&& drop, uint32_t slot) {
    drop(slot);  // the owner counts dead keys
  }

  std::array<std::vector<Key>, kBuckets> buckets_;
  size_t head0_ = 0;  // bucket 0 is consumed from the front
  int64_t last_ = 0;
  int64_t min_time_ = 0;  // earliest live time in lowest_ (valid when lowest_ > 0)
  int lowest_ = -1;       // cached lowest_live_bucket: -1 stale, -2 empty
  std::array<uint64_t, 4> occupied_{};  // bit b-1 set when bucket b >= 1 is not empty
  std::array<int64_t, kBuckets> bucket_min_ = filled(INT64_MAX);  // earliest time per bucket
  // Dead keys still queued anywhere in the owner. While there are some, minima are found
  // by scanning with liveness checks; otherwise they are tracked as keys arrive.
  const size_t* dead_;
};

inline void RadixHeap::push(Key k) {
  const int b = bucket_of(k.time, last_);
  buckets_[b].push_back(k);
  if (b > 0) {
    mark(b);
    bucket_min_[b] = std::min(bucket_min_[b], k.time);
  }
  if (lowest_ == -2) {
    lowest_ = b == 0 ? 0 : b;  // the only key is the minimum
    min_time_ = k.time;
  } else if (b == 0) {
    // Bucket 0's head may be dead (cancelled): then let the next peek look again.
    lowest_ = *dead_ > 0 ? -1 : 0;
  } else if (lowest_ > 0 && (b < lowest_ || (b == lowest_ && k.time < min_time_))) {
    lowest_ = b;
    min_time_ = k.time;
  }
}

// Finds the lowest bucket holding a live key, dropping buckets of dead keys on the way.
template <typename IsLive, typename Drop>
int RadixHeap::lowest_live_bucket(IsLive&& is_live, Drop&& drop) {
  if (lowest_ != -1) return lowest_;  // cached bucket, or -2: empty
  auto& b0 = buckets_[0];
  while (*dead_ > 0 && head0_ < b0.size() && !is_live(b0[head0_].slot)) {
    dropped(drop, b0[head0_++].slot);
  }
  if (head0_ < b0.size()) return lowest_ = 0;
  b0.clear();
  head0_ = 0;
  if (*dead_ == 0) {
    const int i = first_occupied();
    if (i < 0) return lowest_ = -2;
    min_time_ = bucket_min_[i];
    return lowest_ = i;
  }
  for (int i = first_occupied(); i > 0; i = first_occupied()) {
    auto& b = buckets_[i];
    int64_t best = INT64_MAX;
    for (const Key& k : b) {
      if (k.time < best && is_live(k.slot)) best = k.time;
    }
    if (best == INT64_MAX) {
      for (const Key& k : b) dropped(drop, k.slot);
      b.clear();
      unmark(i);
      bucket_min_[i] = INT64_MAX;
      continue;
    }
    min_time_ = best;
    return lowest_ = i;
  }
  return lowest_ = -2;  // empty
}

template <typename IsLive, typename Drop>
int64_t RadixHeap::peek_time(IsLive&& is_live, Drop&& drop) {
  const int b = lowest_live_bucket(is_live, drop);
  if (b == -2) return INT64_MAX;  // stays cached until the next push
  return b == 0 ? last_ : min_time_;
}

template <typename IsLive, typename Drop>
RadixHeap::Key RadixHeap::pop(IsLive&& is_live, Drop&& drop) {
  const int b = lowest_live_bucket(is_live, drop);
  if (b > 0) {
    last_ = min_time_;
    auto& from = buckets_[b];
    for (const Key& k : from) {
      if (*dead_ > 0 && !is_live(k.slot)) {
        dropped(drop, k.slot);
        continue;
      }
      const int to = bucket_of(k.time, last_);
      buckets_[to].push_back(k);
      if (to > 0) {
        mark(to);
        bucket_min_[to] = std::min(bucket_min_[to], k.time);
      }
    }
    from.clear();
    unmark(b);
    bucket_min_[b] = INT64_MAX;
    lowest_ = -1;
    lowest_live_bucket(is_live, drop);
  }
  const Key k = buckets_[0][head0_++];
  lowest_ = -1;
  return k;
}

}  // namespace dtsim
