// Megatron-LM's partial full recomputation (--recompute-method uniform|block,
// --recompute-num-layers) on a chunk of four blocks, worked by hand: what each keeps, what
// it rebuilds at once, and which blocks' forwards run again.
#include <gtest/gtest.h>

#include <vector>

#include "models/chunk_cost.h"
#include "models/cost_model.h"
#include "models/memory_model.h"
#include "models/workload.h"
#include "sim/device_catalog.h"

namespace dtsim::models {
namespace {

Workload gpt() {
  ModelSpec s;
  s.name = "gpt-4";
  s.family = ModelFamily::kGpt;
  s.layers = 4;
  s.hidden = 256;
  s.heads = 4;
  s.vocab = 1000;
  return build_workload(s, WorkloadShape{2, 128, Precision::kBf16});
}

RecomputePolicy full(RecomputeMethod method, int layers) {
  RecomputePolicy p{Recompute::kFull};
  p.method = method;
  p.num_layers = layers;
  return p;
}

struct Chunk {
  double kept = 0;
  double rebuilt = 0;
  double rerun_flops = 0;
  std::vector<bool> rerun;  // per block: any kernel of its forward run again
};

// Blocks 0-3 are layers 1-4 (after the embedding).
Chunk blocks(const Workload& w, RecomputePolicy policy) {
  const RooflineCostModel costs;
  const ChunkCost cc =
      chunk_cost(w, 1, 5, RankShard{}, policy, *find_builtin_device("H100"), costs);
  Chunk c{cc.activation_bytes, cc.recompute_transient_bytes, 0, {}};
  double flops = 0;
  for (const PricedOps& ops : cc.layer_bwd_ops) {
    bool any = false;
    for (const PricedOp& p : ops) {
      if (!p.op.recomputed) continue;
      any = true;
      flops += p.op.flops;
    }
    c.rerun.push_back(any);
  }
  c.rerun_flops = flops;
  return c;
}

TEST(PartialRecompute, UniformGroupsKeepEachGroupsInputAndRebuildTheGroup) {
  const Workload w = gpt();
  const double input = 2.0 * 2 * 128 * 256;  // 2sbh, each block's input
  const double whole = layer_activation_bytes(w.layers[1], input, Recompute::kNone, {});
  const double fwd = w.layers[1].fwd_flops();
  // Groups of two: blocks 0 and 2 keep their input; a group rebuilds both its blocks.
  const Chunk two = blocks(w, full(RecomputeMethod::kUniform, 2));
  EXPECT_DOUBLE_EQ(two.kept, 2 * input);
  EXPECT_DOUBLE_EQ(two.rebuilt, 2 * whole - input);
  EXPECT_EQ(two.rerun, (std::vector<bool>{true, true, true, true}));
  EXPECT_NEAR(two.rerun_flops, 4 * fwd, 1);
  // Groups of one are full recomputation as it was: every block keeps its input.
  const Chunk one = blocks(w, full(RecomputeMethod::kUniform, 1));
  EXPECT_DOUBLE_EQ(one.kept, 4 * input);
  EXPECT_DOUBLE_EQ(one.rebuilt, whole - input);
  const Chunk plain = blocks(w, Recompute::kFull);
  EXPECT_DOUBLE_EQ(plain.kept, one.kept);
  // More blocks than the chunk has: one group.
  EXPECT_DOUBLE_EQ(blocks(w, full(RecomputeMethod::kUniform, 8)).kept, input);
}

TEST(PartialRecompute, BlockCheckpointsTheFirstBlocksAndKeepsTheRest) {
  const Workload w = gpt();
  const double input = 2.0 * 2 * 128 * 256;
  const double whole = layer_activation_bytes(w.layers[1], input, Recompute::kNone, {});
  const double fwd = w.layers[1].fwd_flops();
  const Chunk one = blocks(w, full(RecomputeMethod::kBlock, 1));
  EXPECT_DOUBLE_EQ(one.kept, input + 3 * whole);
  EXPECT_DOUBLE_EQ(one.rebuilt, whole - input);
  EXPECT_EQ(one.rerun, (std::vector<bool>{true, false, false, false}));
  EXPECT_NEAR(one.rerun_flops, fwd, 1);
  const Chunk three = blocks(w, full(RecomputeMethod::kBlock, 3));
  EXPECT_DOUBLE_EQ(three.kept, 3 * input + whole);
  EXPECT_EQ(three.rerun, (std::vector<bool>{true, true, true, false}));
  // No recomputation at all keeps four whole blocks.
  EXPECT_DOUBLE_EQ(blocks(w, Recompute::kNone).kept, 4 * whole);
}

}  // namespace
}  // namespace dtsim::models
