// The flow model's PHASE REPLAY against simulating every phase: the same collective end
// times to the nanosecond and the same link traffic; phases replayed only while nothing
// else can happen, and never while something watches the links.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/simulation.h"
#include "tests/sim/run_outcome.h"
#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using Outcome = testing::RunOutcome;
using testing::ranks_from;

Outcome run(const Cluster& c, const TaskGraph& g, bool replay, bool fast_forward,
            SimObserver* observer = nullptr) {
  SimulationOptions o;
  o.phase_replay = replay;
  o.fast_forward = fast_forward;
  return testing::run_outcome(c, g, o, observer);
}

// Runs `g` with replay off and on (with and without fast-forward) and requires the same
// ends and traffic. Returns the replayed phases with fast-forward on.
int64_t expect_same(const Cluster& c, const TaskGraph& g, const std::string& context) {
  int64_t replayed = 0;
  for (bool ff : {false, true}) {
    const Outcome simulated = run(c, g, false, ff);
    const Outcome replaying = run(c, g, true, ff);
    const std::string where = context + (ff ? ", fast-forward" : ", every round");
    EXPECT_EQ(simulated.result.replayed_phases, 0) << where;
    EXPECT_EQ(simulated.ends.size(), replaying.ends.size()) << where;
    if (simulated.ends.size() != replaying.ends.size()) return -1;
    for (size_t i = 0; i < simulated.ends.size(); ++i) {
      EXPECT_EQ(simulated.ends[i], replaying.ends[i]) << where << ", collective " << i;
    }
    for (size_t l = 0; l < simulated.bytes.size(); ++l) {
      // A replay adds a phase's bytes in one step, where the simulation integrated them
      // piece by piece: the last bits differ.
      EXPECT_NEAR(simulated.bytes[l], replaying.bytes[l], 1e-9 * simulated.bytes[l] + 1e-3)
          << where << ", link " << l;
      EXPECT_EQ(simulated.busy[l], replaying.busy[l]) << where << ", link " << l;
      EXPECT_EQ(simulated.peak[l], replaying.peak[l]) << where << ", link " << l;
    }
    if (ff) replayed = replaying.result.replayed_phases;
  }
  return replayed;
}

// Every algorithm over 32 GPUs on an oversubscribed fat tree, each call three times in a
// row on one stream: the second and third run every phase closed, so they replay it.
TEST(PhaseReplay, ChangesNothingButTheWork) {
  const Cluster c = testing::small_oversubscribed_fat_tree();
  TaskGraph g;
  const uint16_t s = g.stream("comm");
  TaskGraph once;  // each call once: nothing to replay
  const uint16_t s1 = once.stream("comm");
  for (auto algo : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree,
                    CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kHalvingDoubling}) {
    for (Bytes n : {KiB(64), MiB(48)}) {
      for (int i = 0; i < 3; ++i) {
        g.add_collective_with_tasks(
            CollectiveCall{CollectiveOp::kAllReduce, algo, ranks_from(32), n, {}, "ar"}, s);
      }
      once.add_collective_with_tasks(
          CollectiveCall{CollectiveOp::kAllReduce, algo, ranks_from(32), n, {}, "ar"}, s1);
    }
  }
  EXPECT_GT(expect_same(c, g, "three of each"), 0);
  EXPECT_EQ(expect_same(c, once, "one of each"), 0);
}

// A second stream's call over four of the same GPUs starts in the middle of a call that
// ran closed before, once kernels on its ranks end: until those kernels end, nothing
// crosses the first call's links, and nothing but the kernels' end can say that something
// will. The phases it could meet are simulated, so the result is still the same, and
// fewer phases are replayed than without it. Met during the first call, the phase's run
// is not kept.
TEST(PhaseReplay, SimulatesWhatAnythingElseCouldMeet) {
  const Cluster c = testing::small_oversubscribed_fat_tree();
  const auto graph = [](Duration kernels) {
    TaskGraph g;
    const uint16_t a = g.stream("a");
    for (int i = 0; i < 4; ++i) {
      g.add_collective_with_tasks(
          CollectiveCall{
              CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, ranks_from(16), MiB(48), {}, "ar"},
          a);
    }
    if (kernels > Duration::zero()) {
      const uint16_t b = g.stream("b");
      const std::vector<int> ranks = ranks_from(4, 0, 4);
      for (int r : ranks) {
        Task t;
        t.kind = TaskKind::kCompute;
        t.rank = r;
        t.stream = b;
        t.duration = kernels;
        t.name = "kernel";
        g.add(t);
      }
      g.add_collective_with_tasks(
          CollectiveCall{
              CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, ranks, MiB(3), {}, "ag"},
          b);
    }
    return g;
  };
  const TaskGraph quiet_graph = graph(Duration::zero());
  const int64_t quiet = expect_same(c, quiet_graph, "quiet");
  // The second call's middle: the first ran closed and is kept, the second is met.
  const Outcome first = run(c, quiet_graph, false, true);
  const Duration middle = Duration::ns((first.ends[0].count_ns() + first.ends[1].count_ns()) / 2);
  const int64_t met = expect_same(c, graph(middle), "met");
  // The first call's middle: what it did is not the phase's alone, and is not kept.
  const int64_t met_first =
      expect_same(c, graph(Duration::ns(first.ends[0].count_ns() / 2)), "met while recorded");
  EXPECT_GT(quiet, 0);
  EXPECT_LT(met, quiet);
  EXPECT_LT(met_first, quiet);
}

// Something watches the links' busy spans: a replay would report one span per link for a
// whole phase, so every phase is simulated.
TEST(PhaseReplay, NotWhileLinksAreWatched) {
  struct Spans : SimObserver {
    int64_t count = 0;
    void on_link_busy(const LinkBusyRecord&) override { ++count; }
  };
  const Cluster c = testing::small_oversubscribed_fat_tree();
  TaskGraph g;
  const uint16_t s = g.stream("comm");
  for (int i = 0; i < 3; ++i) {
    g.add_collective_with_tasks(
        CollectiveCall{
            CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, ranks_from(32), MiB(8), {}, "ar"},
        s);
  }
  Spans watched, simulated;
  const Outcome with = run(c, g, true, true, &watched);
  const Outcome without = run(c, g, false, true, &simulated);
  EXPECT_EQ(with.result.replayed_phases, 0);
  EXPECT_EQ(watched.count, simulated.count);
  EXPECT_GT(run(c, g, true, true).result.replayed_phases, 0);
}

}  // namespace
}  // namespace dtsim
