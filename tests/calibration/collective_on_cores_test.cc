// A measured collective among CPU ranks runs on their cores: each member's core does the
// call's measured time of work and shares itself with the kernels running meanwhile, and
// the call ends when the last member's part does.
#include <gtest/gtest.h>

#include "calibration/measured_collective_model.h"
#include "sim/simulation.h"
#include "tests/calibration/measured_figures.h"
#include "tests/sim/test_clusters.h"

namespace dtsim::calibration {
namespace {

TEST(CollectiveOnCores, AMeasuredCpuCallSharesTheCoreWithTheKernelBesideIt) {
  const Cluster c = build_cluster(testing::one_region(testing::node_group(1, 2, "CPU", 1, 10),
                                                      testing::fabric(FabricKind::kSingleSwitch)));
  // An all-reduce measured at 4 ms for 1 MiB and 8 ms for 2 MiB.
  const MeasuredCollectiveModel model(
      {figures::two_rank_all_reduce({{int64_t{1} << 20, 4e-3}, {int64_t{2} << 20, 8e-3}})}, "CPU");
  TaskGraph g;
  const TaskId kernel = g.add(testing::compute(0, g.stream("compute"), Duration::ms(10)));
  g.add_collective_with_tasks(CollectiveCall{CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing,
                                             {0, 1}, Bytes(int64_t{1} << 20), {}, "grads"},
                              g.stream("dp"));
  SimulationOptions o;
  o.collective_costs = &model;
  Simulation sim(c, o);
  testing::TaskEnds ends;
  sim.add_observer(&ends);
  const RunResult r = sim.run(g);
  ASSERT_TRUE(r.stalled.empty());
  ASSERT_EQ(r.collectives.size(), 1u);
  // Rank 0's core runs the kernel and its part of the call at half speed each: the call's
  // 4 ms of work there is done at 8 ms (rank 1's alone, at 4), and the call ends with it.
  EXPECT_EQ(r.collectives[0].end, Time::ms(8));
  // By then the kernel has done 4 ms of its 10; the other 6 at full speed.
  EXPECT_EQ(ends.end[kernel], Time::ms(14));
  // The call is communication, not compute, in the rank's time.
  EXPECT_EQ(r.ranks[0].compute, Duration::ms(14));
  EXPECT_EQ(r.ranks[1].compute, Duration::zero());
  EXPECT_EQ(r.ranks[1].communication, Duration::ms(8));
}

}  // namespace
}  // namespace dtsim::calibration
