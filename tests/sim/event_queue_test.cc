// The event queue (timing wheel + radix heap) against a reference ordering: random pushes
// at equal, near, far and very far times, cancellations, and pops in (time, push) order.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "sim/event_queue.h"

namespace dtsim {
namespace {

// Runs random operations on an Engine (which owns the queue and its liveness) and checks
// that events run exactly in (time, scheduling order), cancelled ones never. `dense`
// keeps most delays within a few wheel slots, so that slots hold many keys and events are
// pushed into the slot being drained, before, between and after its remaining keys.
void run_random_schedule(uint64_t seed, int operations, bool dense = false) {
  std::mt19937_64 rng(seed);
  Engine e;
  std::map<std::pair<int64_t, uint64_t>, int> expected;  // (time, order) -> event id
  std::vector<int> ran;
  std::vector<bool> has_run;
  std::vector<EventId> ids;
  std::vector<std::pair<int64_t, uint64_t>> keys;
  uint64_t order = 0;
  auto delay = [&]() -> int64_t {
    if (dense && rng() % 8 != 0) return static_cast<int64_t>(rng() % 1'024);
    switch (rng() % 6) {
      case 0:
        return 0;  // now
      case 1:
        return static_cast<int64_t>(rng() % 300);  // same or next wheel slot
      case 2:
        return static_cast<int64_t>(rng() % 1'000'000);  // inside the wheel
      case 3:
        return 1'048'000 + static_cast<int64_t>(rng() % 2'000);  // at the window edge
      case 4:
        return static_cast<int64_t>(rng() % 50'000'000);  // beyond it
      default:
        return static_cast<int64_t>(rng() % 5'000'000'000LL);  // far beyond
    }
  };
  std::function<void(int)> body;
  auto schedule = [&](int64_t d) {
    const int id = static_cast<int>(ids.size());
    const auto key = std::pair{e.now().count_ns() + d, order++};
    ids.push_back(e.schedule_after(Duration::ns(d), [&, id] { body(id); }));
    keys.push_back(key);
    has_run.push_back(false);
    expected.emplace(key, id);
  };
  int budget = operations;
  body = [&](int id) {
    ran.push_back(id);
    has_run[id] = true;
    // Each event schedules 0-2 more and sometimes cancels a pending one.
    for (int k = static_cast<int>(rng() % 3); k > 0 && budget > 0; --k, --budget) schedule(delay());
    if (rng() % 7 == 0 && !ids.empty()) {
      const int victim = static_cast<int>(rng() % ids.size());
      if (!has_run[victim] && expected.count(keys[victim])) {
        e.cancel(ids[victim]);
        expected.erase(keys[victim]);
      }
    }
  };
  for (int i = 0; i < (dense ? 2'000 : 200); ++i) schedule(delay());
  e.run();
  std::vector<int> want;
  for (const auto& [key, id] : expected) want.push_back(id);
  // Events that ran must be exactly the uncancelled ones, in (time, order).
  ASSERT_EQ(ran.size(), want.size()) << "seed " << seed;
  EXPECT_EQ(ran, want) << "seed " << seed;
  EXPECT_EQ(e.pending_events(), 0u);
}

TEST(EventQueue, RandomSchedulesRunInTimeAndSchedulingOrder) {
  for (uint64_t seed = 1; seed <= 20; ++seed) run_random_schedule(seed, 20'000);
}

TEST(EventQueue, CrowdedSlotsRunInTimeAndSchedulingOrder) {
  for (uint64_t seed = 1; seed <= 20; ++seed) run_random_schedule(seed, 20'000, true);
}

TEST(EventQueue, EqualTimesAcrossWheelAndFarHeapStayFifo) {
  // Event a is scheduled for t = 5 ms while the wheel window ends before it (far heap);
  // time then advances so that b, scheduled later for the same t, lands in the wheel. a
  // was scheduled first, so it must run first.
  Engine e;
  std::string order;
  e.schedule_at(Time::ms(5), [&] { order += "a"; });
  e.schedule_at(Time::ms(4.5), [&] { e.schedule_at(Time::ms(5), [&] { order += "b"; }); });
  e.run();
  EXPECT_EQ(order, "ab");
}

}  // namespace
}  // namespace dtsim
