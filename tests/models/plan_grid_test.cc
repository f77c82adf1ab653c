// The plan grid's enumeration: the (tp, pp) pairs a model admits on a number of ranks.
#include "models/plan_grid.h"

#include <gtest/gtest.h>

namespace dtsim::models {
namespace {

std::vector<std::pair<int, int>> pairs(const std::vector<PlanPoint>& points) {
  std::vector<std::pair<int, int>> out;
  for (const PlanPoint& p : points) out.emplace_back(p.tp, p.pp);
  return out;
}

ModelSpec transformer(int layers, int heads, int kv_heads) {
  ModelSpec m = find_model_preset("llama3-70b")->spec;
  m.layers = layers;
  m.heads = heads;
  m.kv_heads = kv_heads;
  return m;
}

TEST(PlanGrid, EveryDivisorPairWithTpInsideANode) {
  // 16 ranks, 8 per node, 64 heads in 8 key-value groups, 80 layers:
  // tp in {1, 2, 4, 8}; pp every divisor of 16 / tp.
  const auto points = plan_grid(transformer(80, 64, 8), ParallelPlan{}, 16, 8);
  const std::vector<std::pair<int, int>> want = {{1, 1}, {1, 2}, {1, 4}, {1, 8}, {1, 16},
                                                 {2, 1}, {2, 2}, {2, 4}, {2, 8}, {4, 1},
                                                 {4, 2}, {4, 4}, {8, 1}, {8, 2}};
  EXPECT_EQ(pairs(points), want);
  for (const PlanPoint& p : points) EXPECT_EQ(p.tp * p.pp * p.dp, 16);
}

TEST(PlanGrid, HeadsLayersAndContextParallelismBoundThePairs) {
  // 12 heads in 4 groups: tp 8 and tp 3 do not divide both; 2 layers: pp at most 2.
  EXPECT_EQ(pairs(plan_grid(transformer(2, 12, 4), ParallelPlan{}, 8, 8)),
            (std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {4, 1}, {4, 2}}));
  // cp 2 takes its share first: 8 ranks leave 4 for tp x pp x dp.
  ParallelPlan cp;
  cp.cp = 2;
  for (const PlanPoint& p : plan_grid(transformer(80, 64, 8), cp, 8, 8))
    EXPECT_EQ(p.tp * p.pp * p.dp, 4);
}

TEST(PlanGrid, ModelsWithoutTensorParallelOpsTakeTpOne) {
  ModelSpec resnet = find_model_preset("resnet50")->spec;
  for (const PlanPoint& p : plan_grid(resnet, ParallelPlan{}, 8, 8)) EXPECT_EQ(p.tp, 1);
  EXPECT_TRUE(plan_grid(transformer(80, 64, 8), ParallelPlan{}, 0, 8).empty());
}

TEST(PlanGrid, ExpertParallelismMustDivideDp) {
  ParallelPlan ep;
  ep.ep = 4;
  for (const PlanPoint& p : plan_grid(transformer(80, 64, 8), ep, 16, 8)) EXPECT_EQ(p.dp % 4, 0);
  // Folded experts (etp 1) regroup a stage's tp x dp ranks: tp 2 x dp 2 holds ep 4.
  ep.etp = 1;
  bool folded = false;
  for (const PlanPoint& p : plan_grid(transformer(80, 64, 8), ep, 16, 8)) {
    EXPECT_EQ(p.tp * p.dp % 4, 0);
    folded = folded || (p.tp == 2 && p.dp == 2);
  }
  EXPECT_TRUE(folded);
}

}  // namespace
}  // namespace dtsim::models
