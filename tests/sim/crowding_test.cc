// Crowded kernels: a CPU kernel timed beside co-runners runs at its alone speed while its
// CPU's other devices are idle, at its crowded speed while they compute, and in between
// for some of them; devices on other nodes do not crowd it unless the ranks share one CPU.
#include <gtest/gtest.h>

#include "sim/simulation.h"
#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using testing::compute;
using testing::fabric;
using testing::node_group;
using testing::one_region;

Cluster cpus(int nodes, int per_node) {
  return build_cluster(
      one_region(node_group(nodes, per_node, "CPU", 1, 10), fabric(FabricKind::kSingleSwitch)));
}

std::vector<Time> run(const Cluster& c, const TaskGraph& g, bool one_cpu = false) {
  SimulationOptions o;
  o.ranks_share_one_cpu = one_cpu;
  Simulation sim(c, o);
  testing::TaskEnds ends;
  sim.add_observer(&ends);
  const RunResult r = sim.run(g);
  EXPECT_TRUE(r.stalled.empty());
  return ends.end;
}

// Rank 0 runs a 10 ms kernel (timed beside one co-runner, 5 ms alone); rank 1 a 4 ms one
// (2 ms alone when crowded), both from time 0.
TaskGraph two_kernels(bool crowd_second) {
  TaskGraph g;
  const uint16_t s = g.stream("compute");
  const TaskId a = g.add(compute(0, s, Duration::ms(10)));
  const TaskId b = g.add(compute(1, s, Duration::ms(4)));
  g.set_crowding(a, {0.5f, 1});
  if (crowd_second) g.set_crowding(b, {0.5f, 1});
  return g;
}

TEST(Crowding, AKernelRunsAtItsAloneSpeedOnceItsNeighbourStops) {
  // Both compute until 4 ms at their crowded speed; then rank 0 has 6 ms of crowded work
  // left and runs it alone, twice as fast: 3 ms more.
  for (bool crowd_second : {true, false}) {
    const std::vector<Time> end = run(cpus(1, 2), two_kernels(crowd_second));
    EXPECT_EQ(end[0], Time::ms(7)) << crowd_second;
    EXPECT_EQ(end[1], Time::ms(4)) << crowd_second;  // crowded all along, or not crowdable
  }
}

TEST(Crowding, RanksOnOtherNodesDoNotCrowdUnlessTheyShareOneCpu) {
  const std::vector<Time> apart = run(cpus(2, 1), two_kernels(true));
  EXPECT_EQ(apart[0], Time::ms(5));  // alone from start to end
  EXPECT_EQ(apart[1], Time::ms(2));
  const std::vector<Time> packed = run(cpus(2, 1), two_kernels(true), true);
  EXPECT_EQ(packed[0], Time::ms(7));
  EXPECT_EQ(packed[1], Time::ms(4));
}

TEST(Crowding, KernelsWithoutCrowdingKeepTheirTime) {
  TaskGraph g;
  const uint16_t s = g.stream("compute");
  g.add(compute(0, s, Duration::ms(10)));
  g.add(compute(1, s, Duration::ms(4)));
  const std::vector<Time> end = run(cpus(1, 2), g);
  EXPECT_EQ(end[0], Time::ms(10));
  EXPECT_EQ(end[1], Time::ms(4));
}

TEST(Crowding, SomeOfTheCoRunnersComputingGiveATimeInBetween) {
  // A 12 ms kernel timed beside two co-runners (6 ms alone) on a CPU of three devices,
  // whose neighbours stop at 3 and 6 ms. Until 3 ms both crowd it (speed 1: 3 ms of
  // work); until 6 ms one of two does (speed 1 / (0.5 + 0.5 / 2) = 4/3: 4 ms of work);
  // then alone (speed 2), the last 5 ms of work in 2.5 ms.
  TaskGraph g;
  const uint16_t s = g.stream("compute");
  const TaskId a = g.add(compute(0, s, Duration::ms(12)));
  g.add(compute(1, s, Duration::ms(3)));
  g.add(compute(2, s, Duration::ms(6)));
  g.set_crowding(a, {0.5f, 2});
  const std::vector<Time> end = run(cpus(1, 3), g);
  EXPECT_EQ(end[0], Time::us(8500));
  EXPECT_EQ(end[1], Time::ms(3));
  EXPECT_EQ(end[2], Time::ms(6));
}

TEST(Crowding, ANeighbourStartingLaterSlowsTheKernelDown) {
  // Ranks 0 and 1 share node 0's CPU; rank 2 is on node 1. Rank 0's 10 ms kernel (5 ms
  // alone) runs alone until rank 1 starts at 2 ms (after rank 2's 2 ms kernel, which is
  // on another node and does not crowd it): 4 ms of work in those 2 ms, the other 6 ms
  // at the crowded speed.
  TaskGraph g;
  const uint16_t s = g.stream("compute");
  const TaskId a = g.add(compute(0, s, Duration::ms(10)));
  const TaskId first = g.add(compute(2, s, Duration::ms(2)));
  const TaskId b = g.add(compute(1, s, Duration::ms(20), {first}));
  g.set_crowding(a, {0.5f, 1});
  const std::vector<Time> end = run(cpus(2, 2), g);
  EXPECT_EQ(end[a], Time::ms(8));
  EXPECT_EQ(end[first], Time::ms(2));
  EXPECT_EQ(end[b], Time::ms(22));
}

}  // namespace
}  // namespace dtsim
