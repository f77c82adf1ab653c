// A hash map from a (source, destination) vertex pair to a small value, in one flat array.
//
// Routes and route summaries are looked up once per flow or transfer: millions of times in
// a step on 16,384 GPUs, over hundreds of thousands of pairs. std::unordered_map spends
// such a lookup on a modulo by a prime and a pointer to a node of its own (a cache miss
// more); here a lookup is a multiply-shift hash and linear probing in slots that hold the
// key beside the value. Entries are never erased, which keeps probing simple.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "sim/check.h"

namespace dtsim {

template <typename V>
class PairMap {
 public:
  static uint64_t key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

  // The value of `k`, or null. The pointer is valid until the next insert.
  const V* find(uint64_t k) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(k);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == k) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

  // Inserts `value` under `k`, which must not be present; returns the stored value.
  V& insert(uint64_t k, V value) {
    DTSIM_CHECK(k != kEmpty, "PairMap key reserved for empty slots");
    // At most half full: probes stay short even when keys cluster.
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = home(k);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      DTSIM_CHECK(s.key != k, "PairMap key inserted twice");
      if (s.key != kEmpty) continue;
      s.key = k;
      s.value = std::move(value);
      ++size_;
      return s.value;
    }
  }

  [[nodiscard]] size_t size() const { return size_; }
  // Bytes an entry costs: between a quarter and half of the slots are full, so two to
  // four slots an entry; three on average over growth.
  static constexpr double entry_bytes() { return 3.0 * sizeof(Slot); }

 private:
  static constexpr uint64_t kEmpty = std::numeric_limits<uint64_t>::max();
  struct Slot {
    uint64_t key = kEmpty;
    V value{};
  };

  // Fibonacci hashing: the multiply spreads both halves of the pair over the top bits.
  size_t home(uint64_t k) const {
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t capacity = old.empty() ? 64 : 2 * old.size();
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (Slot& s : old) {
      if (s.key != kEmpty) insert(s.key, std::move(s.value));
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace dtsim
