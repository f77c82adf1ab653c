// Ranks that run alike in a lowered training step: with tensor, pipeline and data
// parallelism together, each (stage, tensor rank) of the first replica stands for that
// rank of every replica, and every call and pipeline message maps onto theirs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "models/lowering.h"
#include "models/workload.h"
#include "sim/cluster_spec.h"
#include "sim/rank_fold.h"
#include "sim/simulation.h"
#include "tests/sim/test_clusters.h"

namespace dtsim::models {
namespace {

using dtsim::testing::fabric;
using dtsim::testing::node_group;
using dtsim::testing::one_region;

LoweredStep lower_gpt(const Cluster& cluster, const ParallelPlan& plan, bool tied) {
  ModelSpec m;
  m.name = "test-gpt";
  m.family = ModelFamily::kGpt;
  m.layers = 4;
  m.hidden = 512;
  m.heads = 8;
  m.vocab = 1000;
  m.seq_len = 128;
  m.tied_embeddings = tied;
  static const RooflineCostModel roofline;
  LoweringInput in;
  in.cluster = &cluster;
  in.model = m;
  in.training.global_batch = 8;
  in.training.micro_batch = 1;
  in.plan = plan;
  in.costs = &roofline;
  return lower_training_step(in);
}

TEST(RankFoldOfALoweredStep, TheFirstReplicaStandsForEveryReplica) {
  // Two nodes of 8: TP 2 x PP 2 x DP 4, the replicas on both nodes. With tied embeddings
  // the first and last stage of each replica also all-reduce the table's gradients.
  const Cluster c = build_cluster(one_region(node_group(2, 8), fabric(FabricKind::kSingleSwitch)));
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 2;
  for (const bool tied : {false, true}) {
    const LoweredStep step = lower_gpt(c, plan, tied);
    ASSERT_THAT(step.graph.validate(c.num_ranks()), ::testing::IsEmpty());
    const RankFold f = fold_ranks(step.graph, c);
    EXPECT_TRUE(f.folds()) << f.inconsistent;
    EXPECT_EQ(f.classes, 4);
    EXPECT_EQ(f.largest_class, 4);
    for (int r = 0; r < c.num_ranks(); ++r) {
      const RankRole& mine = step.roles[r];
      const RankRole& rep = step.roles[f.representative[r]];
      EXPECT_EQ(rep.dp, 0) << "rank " << r;
      EXPECT_EQ(rep.pp, mine.pp) << "rank " << r;
      EXPECT_EQ(rep.tp, mine.tp) << "rank " << r;
    }
    // The other replicas' tensor-parallel calls and pipeline messages are mirrors: three
    // of every four.
    EXPECT_GT(f.mirror_calls, 0);
    EXPECT_EQ(f.mirror_messages * 4, f.messages * 3);
    // What a fold would rest on: simulated in full, on this symmetric cluster, every
    // rank's time goes exactly where its representative's does, under either network model.
    for (const char* network : {"flow", "analytical"}) {
      SimulationOptions options;
      options.network_model = network;
      Simulation sim(c, options);
      const RunResult run = sim.run(step.graph);
      ASSERT_THAT(run.stalled, ::testing::IsEmpty());
      for (int r = 0; r < c.num_ranks(); ++r) {
        const RankStats& mine = run.ranks[r];
        const RankStats& rep = run.ranks[f.representative[r]];
        EXPECT_EQ(mine.compute, rep.compute) << network << " rank " << r;
        EXPECT_EQ(mine.communication, rep.communication) << network << " rank " << r;
        EXPECT_EQ(mine.waiting, rep.waiting) << network << " rank " << r;
        EXPECT_EQ(mine.idle, rep.idle) << network << " rank " << r;
        EXPECT_EQ(mine.peak_memory, rep.peak_memory) << network << " rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace dtsim::models
