// The flow model's shortcuts (a flow alone on its links runs outside the max-min solver;
// the solver settles local changes without solving, or solves only the flows they can
// move) against solving every change: the same collective end times to the nanosecond and
// the same link traffic, with flows that start alone and are joined later, on dedicated
// and on shared links, every round simulated and fast-forwarded.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "sim/simulation.h"
#include "tests/sim/run_outcome.h"
#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using testing::fabric;
using testing::node_group;
using testing::one_region;

using Outcome = testing::RunOutcome;

std::vector<int> iota(int n, int first = 0, int stride = 1) {
  return testing::ranks_from(n, first, stride);
}

struct Shortcuts {
  bool lone = false;
  bool local_changes = false;
};

Outcome run(const Cluster& c, const TaskGraph& g, Shortcuts shortcuts, bool fast_forward) {
  SimulationOptions o;
  o.lone_flows = shortcuts.lone;
  o.solver_local_changes = shortcuts.local_changes;
  o.fast_forward = fast_forward;
  return testing::run_outcome(c, g, o);
}

void expect_same(const Cluster& c, const TaskGraph& g, const std::string& context) {
  for (bool ff : {false, true}) {
    const Outcome solved = run(c, g, Shortcuts{}, ff);
    for (const Shortcuts taken :
         {Shortcuts{true, false}, Shortcuts{false, true}, Shortcuts{true, true}}) {
      const Outcome shortcut = run(c, g, taken, ff);
      const std::string where = context + (ff ? ", fast-forward" : ", every round") +
                                (taken.lone ? ", lone flows" : "") +
                                (taken.local_changes ? ", local changes" : "");
      ASSERT_EQ(solved.ends.size(), shortcut.ends.size()) << where;
      for (size_t i = 0; i < solved.ends.size(); ++i) {
        EXPECT_EQ(solved.ends[i], shortcut.ends[i]) << where << ", collective " << i;
      }
      for (size_t l = 0; l < solved.bytes.size(); ++l) {
        // Integrating a load in two pieces instead of one rounds differently in the last bits.
        EXPECT_NEAR(solved.bytes[l], shortcut.bytes[l], 1e-9 * solved.bytes[l] + 1e-3)
            << where << ", link " << l;
        EXPECT_EQ(solved.busy[l], shortcut.busy[l]) << where << ", link " << l;
        // A rate the solver works out from a capacity less its frozen flows' rates (the
        // affected set) rounds differently in the last bits from one of the whole component.
        EXPECT_NEAR(solved.peak[l], shortcut.peak[l], 1e-12) << where << ", link " << l;
      }
    }
  }
}

// Every algorithm over 32 GPUs on an oversubscribed fat tree (inside a node flows have
// NVSwitch ports to themselves; across nodes they meet on leaf uplinks), with a second
// stream whose smaller calls start and end in the middle of the first's rounds, so that
// flows that started alone are joined and left.
TEST(FlowShortcuts, ChangeNothingButTheWork) {
  const Cluster c = testing::small_oversubscribed_fat_tree();
  TaskGraph g;
  const uint16_t a = g.stream("a");
  const uint16_t b = g.stream("b");
  for (auto algo : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree,
                    CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kHalvingDoubling}) {
    for (Bytes n : {KiB(64), MiB(48)}) {
      g.add_collective_with_tasks(
          CollectiveCall{CollectiveOp::kAllReduce, algo, iota(32), n, {}, "ar"}, a);
    }
    g.add_collective_with_tasks(
        CollectiveCall{
            CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, iota(8, 0, 4), MiB(3), {}, "ag"},
        b);
    g.add_collective_with_tasks(
        CollectiveCall{
            CollectiveOp::kAllToAll, CollectiveAlgorithm::kDirect, iota(4, 1), KiB(700), {}, "a2a"},
        b);
  }
  expect_same(c, g, "fat tree");
}

// Rings on dedicated links (one NIC per GPU, a single switch): every flow is alone, and the
// shortcut leaves the solver idle; a ring over two of the same GPUs on another stream then
// shares their NICs.
TEST(FlowShortcuts, RingsOnDedicatedLinksAndAJoiningRing) {
  const Cluster c = build_cluster(
      one_region(node_group(8, 1, "A100-80GB", 1, 100), fabric(FabricKind::kSingleSwitch)));
  for (bool joined : {false, true}) {
    TaskGraph g;
    const uint16_t a = g.stream("a");
    g.add_collective_with_tasks(
        CollectiveCall{
            CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, iota(8), MiB(40), {}, "ar"},
        a);
    if (joined) {
      const uint16_t b = g.stream("b");
      g.add_collective_with_tasks(
          CollectiveCall{
              CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {2, 5}, KiB(300), {}, "x"},
          b);
      g.add_collective_with_tasks(
          CollectiveCall{
              CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {5, 2}, MiB(9), {}, "y"},
          b);
    }
    expect_same(c, g, joined ? "joined" : "alone");
  }
}

}  // namespace
}  // namespace dtsim
