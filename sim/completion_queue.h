// Completion times of a fluid model's actions: a min-heap with lazy invalidation, beside a
// run of entries pushed in order. When an action's rate changes, the model pushes a new
// entry with a new version; stale entries are skipped when they reach the top.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "sim/units.h"

namespace dtsim {

// Entries come out by time, ties by action id (a deterministic order). An entry no earlier
// than the last one pushed goes to the back of the run, in O(1); any other to the heap; the
// next entry is the earlier of the run's front and the heap's top. A ring's steps push
// their completions in order (same time, rising ids), so they never touch the heap.
class CompletionQueue {
 public:
  void push(Time at, uint32_t action, uint32_t version) {
    const Entry e{at.count_ns(), action, version};
    if (run_.empty() || !(run_.back() > e)) {
      run_.push_back(e);
    } else {
      heap_.push(e);
    }
  }

  // Earliest completion whose entry `is_current(action, version)` still accepts.
  template <typename IsCurrent>
  Time next(IsCurrent&& is_current) {
    while (!empty()) {
      const Entry& top = this->top();
      if (is_current(top.action, top.version)) return Time::ns(top.time_ns);
      pop();
    }
    return Time::infinite();
  }

  // Calls finish(action) for every current entry due at or before `now`, in time order
  // (ties by action id, so the order is deterministic).
  template <typename IsCurrent, typename Finish>
  void pop_due(Time now, IsCurrent&& is_current, Finish&& finish) {
    while (!empty() && top().time_ns <= now.count_ns()) {
      const Entry top = this->top();
      pop();
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
  bool empty() const { return run_.empty() && heap_.empty(); }
  bool top_in_run() const {
    return !run_.empty() && (heap_.empty() || !(run_[run_head_] > heap_.top()));
  }
  const Entry& top() const { return top_in_run() ? run_[run_head_] : heap_.top(); }
  void pop() {
    if (!top_in_run()) {
      heap_.pop();
      return;
    }
    ++run_head_;
    // The run's popped front is dropped once it is half of it, so that a run that never
    // empties keeps its memory to twice what it holds.
    if (run_head_ == run_.size()) {
      run_.clear();
      run_head_ = 0;
    } else if (run_head_ > 1024 && run_head_ * 2 > run_.size()) {
      run_.erase(run_.begin(), run_.begin() + static_cast<std::ptrdiff_t>(run_head_));
      run_head_ = 0;
    }
  }

  // In order from run_head_ on; emptied as soon as its last entry is popped, so a run that
  // is not empty always has an entry at run_head_.
  std::vector<Entry> run_;
  size_t run_head_ = 0;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
};

}  // namespace dtsim
