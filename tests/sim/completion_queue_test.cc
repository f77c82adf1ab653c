// CompletionQueue: entries come out by time, ties by action, whether they were pushed in
// order (the run) or not (the heap), and stale versions are skipped.
#include "sim/completion_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

namespace dtsim {
namespace {

using Popped = std::vector<std::pair<int64_t, uint32_t>>;  // (time ns, action)

// Pops everything due up to `now`, every version current.
Popped pop_due(CompletionQueue& q, int64_t now) {
  Popped out;
  q.pop_due(
      Time::ns(now), [](uint32_t, uint32_t) { return true; },
      [&](uint32_t action) { out.emplace_back(now, action); });
  return out;
}

TEST(CompletionQueue, InOrderAndOutOfOrderPushesComeOutInOneOrder) {
  CompletionQueue q;
  q.push(Time::ns(10), 1, 0);
  q.push(Time::ns(10), 3, 0);  // in order: the run
  q.push(Time::ns(10), 2, 0);  // out of order: the heap
  q.push(Time::ns(5), 9, 0);   // earlier than the run's back: the heap
  q.push(Time::ns(20), 0, 0);  // in order again
  std::vector<uint32_t> order;
  q.pop_due(
      Time::ns(100), [](uint32_t, uint32_t) { return true; },
      [&](uint32_t action) { order.push_back(action); });
  EXPECT_EQ(order, (std::vector<uint32_t>{9, 1, 2, 3, 0}));
  EXPECT_EQ(q.next([](uint32_t, uint32_t) { return true; }), Time::infinite());
}

TEST(CompletionQueue, StaleVersionsAreSkippedWhereverTheyWait) {
  CompletionQueue q;
  std::vector<uint32_t> current = {0, 0, 0};
  const auto is_current = [&](uint32_t a, uint32_t v) { return current[a] == v; };
  q.push(Time::ns(10), 0, 0);
  q.push(Time::ns(30), 1, 0);
  q.push(Time::ns(20), 2, 0);  // heap
  current[0] = 1;              // action 0's rate changed: its first entry is stale
  q.push(Time::ns(40), 0, 1);
  EXPECT_EQ(q.next(is_current), Time::ns(20));
  current[2] = 1;  // and action 2's, whose entry sits in the heap
  EXPECT_EQ(q.next(is_current), Time::ns(30));
  std::vector<uint32_t> order;
  q.pop_due(Time::ns(100), is_current, [&](uint32_t a) { order.push_back(a); });
  EXPECT_EQ(order, (std::vector<uint32_t>{1, 0}));
}

TEST(CompletionQueue, MatchesASortedReferenceOverRandomPushesAndPops) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    CompletionQueue q;
    std::vector<std::pair<int64_t, uint32_t>> reference;
    int64_t now = 0;
    for (int step = 0; step < 3000; ++step) {
      // Mostly pushes in order (a round's same-time completions), sometimes earlier ones.
      const int kind = static_cast<int>(rng() % 10);
      if (kind < 6) {
        const int64_t at = now + static_cast<int64_t>(rng() % (kind < 3 ? 3 : 50));
        const uint32_t action = rng() % 64;
        q.push(Time::ns(at), action, 0);
        reference.emplace_back(at, action);
      } else {
        now += static_cast<int64_t>(rng() % 20);
        std::sort(reference.begin(), reference.end());
        const auto due =
            std::upper_bound(reference.begin(), reference.end(), std::make_pair(now, UINT32_MAX));
        Popped expected;
        for (auto it = reference.begin(); it != due; ++it) expected.emplace_back(now, it->second);
        reference.erase(reference.begin(), due);
        ASSERT_EQ(pop_due(q, now), expected) << "seed " << seed << ", step " << step;
      }
    }
    now += 1000;
    std::sort(reference.begin(), reference.end());
    Popped expected;
    for (const auto& r : reference) expected.emplace_back(now, r.second);
    EXPECT_EQ(pop_due(q, now), expected) << "seed " << seed;
  }
}

}  // namespace
}  // namespace dtsim
