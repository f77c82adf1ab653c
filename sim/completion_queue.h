// Completion times of a fluid model's actions: a min-heap with lazy invalidation. When an
// action's rate changes, the model pushes a new entry with a new version; stale entries
// are skipped when they reach the top.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "sim/units.h"

namespace dtsim {

class CompletionQueue {
 public:
  void push(Time at, uint32_t action, uint32_t version) {
    heap_.push(Entry{at.count_ns(), action, version});
  }

  // Earliest completion whose entry `is_current(action, version)` still accepts.
  template <typename IsCurrent>
  Time next(IsCurrent&& is_current) {
    while (!heap_.empty()) {
      const Entry& top = heap_.top();
      if (is_current(top.action, top.version)) return Time::ns(top.time_ns);
      heap_.pop();
    }
    return Time::infinite();
  }

  // Calls finish(action) for every current entry due at or before `now`, in time order
  // (ties by action id, so the order is deterministic).
  template <typename IsCurrent, typename Finish>
  void pop_due(Time now, IsCurrent&& is_current, Finish&& finish) {
    while (!heap_.empty() && heap_.top().time_ns <= now.count_ns()) {
      const Entry top = heap_.top();
      heap_.pop();
      if (is_current(top.action, top.version)) finish(top.action);
    }
  }

 private:
  struct Entry {
    int64_t time_ns;
    uint32_t action;
    uint32_t version;
    bool operator>(const Entry& o) const {
      return time_ns != o.time_ns ? time_ns > o.time_ns : action > o.action;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
};

}  // namespace dtsim
