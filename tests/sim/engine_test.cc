// Event engine: ordering at equal times, cancel, run-until, independent instances.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/engine.h"

namespace dtsim {
namespace {

TEST(Engine, RunsEventsInTimeOrderAndEqualTimesInSchedulingOrder) {
  Engine e;
  std::string order;
  e.schedule_at(Time::ns(20), [&] { order += "c"; });
  e.schedule_at(Time::ns(10), [&] { order += "a"; });
  e.schedule_at(Time::ns(10), [&] { order += "b"; });
  e.schedule_at(Time::ns(20), [&] { order += "d"; });
  e.run();
  EXPECT_EQ(order, "abcd");
  EXPECT_EQ(e.now().count_ns(), 20);
  EXPECT_EQ(e.events_processed(), 4u);
}

TEST(Engine, EventsScheduledForNowRunAfterThoseAlreadyPending) {
  Engine e;
  std::string order;
  e.schedule_at(Time::ns(5), [&] {
    order += "a";
    e.schedule_after(Duration::zero(), [&] { order += "c"; });
  });
  e.schedule_at(Time::ns(5), [&] { order += "b"; });
  e.run();
  EXPECT_EQ(order, "abc");
}

TEST(Engine, CancelledEventsNeverRun) {
  Engine e;
  int ran = 0;
  const EventId a = e.schedule_at(Time::ns(1), [&] { ran += 1; });
  e.schedule_at(Time::ns(2), [&] { ran += 10; });
  const EventId c = e.schedule_at(Time::ns(3), [&] { ran += 100; });
  e.cancel(a);
  e.cancel(c);
  e.cancel(c);  // twice is harmless
  EXPECT_EQ(e.pending_events(), 1u);
  e.run();
  EXPECT_EQ(ran, 10);
  e.cancel(a);  // after the fact: a no-op
}

TEST(Engine, CancelFromInsideAnEvent) {
  Engine e;
  int ran = 0;
  EventId later;
  e.schedule_at(Time::ns(1), [&] { e.cancel(later); });
  later = e.schedule_at(Time::ns(2), [&] { ++ran; });
  e.run();
  EXPECT_EQ(ran, 0);
}

TEST(Engine, SlotReuseDoesNotResurrectCancelledIds) {
  Engine e;
  int ran = 0;
  const EventId first = e.schedule_at(Time::ns(1), [&] { ++ran; });
  e.run();
  // The slot of `first` is free again; a new event takes it. Cancelling the stale id
  // must not cancel the new event.
  e.schedule_at(Time::ns(2), [&] { ran += 10; });
  e.cancel(first);
  e.run();
  EXPECT_EQ(ran, 11);
}

TEST(Engine, CancellingTheNextEventAtTheSameInstantSkipsIt) {
  // The first event cancels the second (due at the same instant) and schedules a third
  // for now: the cancelled one must not run, the third must.
  Engine e;
  std::string order;
  EventId y;
  e.schedule_at(Time::ns(5), [&] {
    order += "a";
    e.cancel(y);
    e.schedule_after(Duration::zero(), [&] { order += "c"; });
  });
  y = e.schedule_at(Time::ns(5), [&] { order += "b"; });
  e.run();
  EXPECT_EQ(order, "ac");
  EXPECT_EQ(e.pending_events(), 0u);
}

TEST(Engine, CancelAfterPeekingStillSkipsTheEvent) {
  Engine e;
  int ran = 0;
  const EventId a = e.schedule_at(Time::ns(10), [&] { ran += 1; });
  e.schedule_at(Time::ns(20), [&] { ran += 10; });
  EXPECT_EQ(e.next_event_time(), Time::ns(10));
  e.cancel(a);
  EXPECT_EQ(e.next_event_time(), Time::ns(20));
  EXPECT_EQ(e.run(), Time::ns(20));
  EXPECT_EQ(ran, 10);
}

TEST(Engine, RunUntilStopsBeforeLaterEvents) {
  Engine e;
  std::vector<int64_t> seen;
  for (int64_t t : {5, 10, 15, 20}) e.schedule_at(Time::ns(t), [&, t] { seen.push_back(t); });
  e.run(Time::ns(12));
  EXPECT_EQ(seen, (std::vector<int64_t>{5, 10}));
  EXPECT_EQ(e.now().count_ns(), 10);
  e.run();
  EXPECT_EQ(seen.size(), 4u);
}

TEST(Engine, TwoEnginesAreIndependent) {
  Engine a, b;
  int ra = 0, rb = 0;
  a.schedule_at(Time::ns(100), [&] { ++ra; });
  b.schedule_at(Time::ns(7), [&] { ++rb; });
  b.run();
  EXPECT_EQ(rb, 1);
  EXPECT_EQ(ra, 0);
  EXPECT_EQ(b.now().count_ns(), 7);
  EXPECT_EQ(a.now().count_ns(), 0);
  a.run();
  EXPECT_EQ(a.now().count_ns(), 100);
}

// A model whose single action completes at a set time; checks that the loop interleaves
// model completions with timed events at the right instants.
class OneShotModel final : public ResourceModel {
 public:
  explicit OneShotModel(Time at, std::string& log) : at_(at), log_(log) {}
  Time next_completion() override { return done_ ? Time::infinite() : at_; }
  void complete_due(Time now) override {
    log_ += "M" + std::to_string(now.count_ns());
    done_ = true;
  }

 private:
  Time at_;
  std::string& log_;
  bool done_ = false;
};

TEST(Engine, ModelCompletionsInterleaveWithEvents) {
  Engine e;
  std::string log;
  OneShotModel m(Time::ns(15), log);
  e.add_model(&m);
  e.schedule_at(Time::ns(10), [&] { log += "E10"; });
  e.schedule_at(Time::ns(15), [&] { log += "E15"; });
  e.schedule_at(Time::ns(20), [&] { log += "E20"; });
  e.run();
  // At t = 15 the pending event runs first, then the model completes.
  EXPECT_EQ(log, "E10E15M15E20");
  EXPECT_EQ(e.horizon_excluding(&m), Time::infinite());
}

}  // namespace
}  // namespace dtsim
