// Layer partitioning over pipeline stages: largest-remainder splits, transformer stages that
// keep the embedding and head at the ends, explicit and paced counts, the pipeline split
// against exhaustive search, FLOPs balance for vision networks, and rejected inputs.
#include "models/stage_partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace dtsim::models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModelSpec tiny_gpt(int layers = 8) {
  ModelSpec s;
  s.name = "tiny-gpt";
  s.family = ModelFamily::kGpt;
  s.layers = layers;
  s.hidden = 512;
  s.heads = 8;
  s.vocab = 1000;
  s.seq_len = 128;
  return s;
}

Workload gpt_workload(int layers = 8) { return build_workload(tiny_gpt(layers), WorkloadShape{}); }

// A pipeline of `m` micro-batches over stages of these paces: (m - 1) x the slowest stage
// plus the sum of all.
SplitCost pipeline_of(int64_t m, std::vector<StagePace> pace) {
  return [m, pace](const std::vector<int64_t>& blocks) {
    double slowest = 0, sum = 0;
    for (size_t k = 0; k < blocks.size(); ++k) {
      const double t =
          pace[k].fixed_seconds + pace[k].block_seconds * static_cast<double>(blocks[k]);
      slowest = std::max(slowest, t);
      sum += t;
    }
    return static_cast<double>(m - 1) * slowest + sum;
  };
}

std::vector<std::pair<int, int>> ranges(const std::vector<LayerRange>& r) {
  std::vector<std::pair<int, int>> out;
  for (const LayerRange& x : r) out.emplace_back(x.begin, x.end);
  return out;
}

std::string partition_error(const Workload& w, int stages, std::vector<int> counts) {
  try {
    partition_layers(w, stages, counts, {});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(StagePartitionSplit, EvenSplitGivesRemainderToEarlierParts) {
  // 10 over three equal weights with a minimum of 1: 7 spare, 7/3 = 2.33 each, so 3 + 3 +
  // 3 and the one left over goes to the first of the tied remainders.
  EXPECT_THAT(proportional_split(10, {1, 1, 1}, 1), ElementsAre(4, 3, 3));
  // Ties of 0.5 and 0.5: the earlier part wins.
  EXPECT_THAT(proportional_split(10, {3, 1}, 0), ElementsAre(8, 2));
}

TEST(StagePartitionSplit, LargestRemainderWins) {
  // 10 by weights 1 : 2 : 4 = 1.43, 2.86, 5.71: floors 1, 2, 5 (8), and the two left go
  // to the largest remainders, .86 then .71.
  EXPECT_THAT(proportional_split(10, {1, 2, 4}, 0), ElementsAre(1, 3, 6));
  // Weights need not sum to one.
  EXPECT_THAT(proportional_split(10, {0.1, 0.2, 0.4}, 0), ElementsAre(1, 3, 6));
}

TEST(StagePartitionSplit, MinimumHoldsWhateverTheWeights) {
  // 5 with minimum 2 each leaves 1 spare: 100/101 of it to the first part.
  EXPECT_THAT(proportional_split(5, {100, 1}, 2), ElementsAre(3, 2));
  EXPECT_THAT(proportional_split(4, {1e6, 1, 1, 1}, 1), ElementsAre(1, 1, 1, 1));
  // Sums are exact for awkward weights.
  const std::vector<double> w = {0.37, 1.91, 2.2, 0.05, 3.3, 0.71, 1.0};
  for (int64_t total : {7, 8, 13, 100, 997}) {
    const std::vector<int64_t> s = proportional_split(total, w, 1);
    EXPECT_EQ(std::accumulate(s.begin(), s.end(), int64_t{0}), total) << total;
    for (int64_t x : s) EXPECT_GE(x, 1);
  }
}

TEST(StagePartitionSplit, RejectsTooLittleToSplit) {
  EXPECT_THROW(proportional_split(3, {1, 1}, 2), std::invalid_argument);
  EXPECT_THROW(proportional_split(3, {}, 0), std::invalid_argument);
}

TEST(StagePartitionTransformer, EvenKeepsEmbeddingFirstAndHeadLast) {
  // Layers: embedding (0), block.0..7 (1..8), head (9). Four stages of two blocks; the
  // first also holds the embedding, the last the head.
  const Workload w = gpt_workload();
  ASSERT_EQ(w.layers.size(), 10u);
  ASSERT_EQ(w.layers.front().kind, LayerKind::kEmbedding);
  ASSERT_EQ(w.layers.back().kind, LayerKind::kHead);
  EXPECT_THAT(ranges(partition_layers(w, 4, {}, {})),
              ElementsAre(std::pair{0, 3}, std::pair{3, 5}, std::pair{5, 7}, std::pair{7, 10}));
  // One stage holds everything.
  EXPECT_THAT(ranges(partition_layers(w, 1, {}, {})), ElementsAre(std::pair{0, 10}));
  // As many stages as blocks.
  const std::vector<LayerRange> eight = partition_layers(w, 8, {}, {});
  EXPECT_EQ(eight.front().begin, 0);
  EXPECT_EQ(eight.front().end, 2);
  EXPECT_EQ(eight.back().begin, 8);
  EXPECT_EQ(eight.back().end, 10);
}

TEST(StagePartitionTransformer, UnevenBlocksGoToEarlierStages) {
  // 8 blocks over 3 stages: 3, 3, 2.
  EXPECT_THAT(ranges(partition_layers(gpt_workload(), 3, {}, {})),
              ElementsAre(std::pair{0, 4}, std::pair{4, 7}, std::pair{7, 10}));
}

TEST(StagePartitionTransformer, ExplicitCounts) {
  EXPECT_THAT(ranges(partition_layers(gpt_workload(), 4, {1, 3, 3, 1}, {})),
              ElementsAre(std::pair{0, 2}, std::pair{2, 5}, std::pair{5, 8}, std::pair{8, 10}));
}

// Megatron-LM's account-for-embedding and account-for-loss split: 8 blocks and the two
// end layers over 10 virtual stages, the first holding the embedding alone and the last
// the head alone. A zero anywhere else would leave a stage empty.
TEST(StagePartitionTransformer, EndStagesMayHoldTheEmbeddingOrTheHeadAlone) {
  const std::vector<int> counts = {0, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  const std::vector<LayerRange> r = partition_layers(gpt_workload(), 10, counts, {});
  EXPECT_EQ(ranges(r).front(), (std::pair{0, 1}));
  EXPECT_EQ(ranges(r)[1], (std::pair{1, 2}));
  EXPECT_EQ(ranges(r).back(), (std::pair{9, 10}));
  EXPECT_THAT(partition_error(gpt_workload(), 4, {2, 0, 3, 3}),
              HasSubstr("0 only for the first and last virtual stage"));
  EXPECT_THAT(partition_error(gpt_workload(), 1, {0}), HasSubstr("at least 1"));
}

TEST(StagePartitionTransformer, PacedCountsFollowThePipeline) {
  // A block takes 1 on the first stage and 3 on the second. Over 64 micro-batches the
  // steady state rules: 6 and 2 blocks (6 each).
  const std::vector<StagePace> fast_first{{1, 0}, {3, 0}};
  EXPECT_THAT(
      ranges(partition_layers(gpt_workload(), 2, {}, fast_first, pipeline_of(64, fast_first))),
      ElementsAre(std::pair{0, 7}, std::pair{7, 10}));
  // The slow stage first: 2 and 6, whatever the position.
  const std::vector<StagePace> slow_first{{3, 0}, {1, 0}};
  EXPECT_THAT(
      ranges(partition_layers(gpt_workload(), 2, {}, slow_first, pipeline_of(64, slow_first))),
      ElementsAre(std::pair{0, 3}, std::pair{3, 10}));
  // One micro-batch passes each stage once: 7 and 1 blocks take 7 + 3, against 6 + 6;
  // without a cost, that is what a split is judged by.
  EXPECT_THAT(ranges(partition_layers(gpt_workload(), 2, {}, fast_first)),
              ElementsAre(std::pair{0, 8}, std::pair{8, 10}));
  // Explicit counts win over paces.
  EXPECT_THAT(ranges(partition_layers(gpt_workload(), 2, {4, 4}, fast_first)),
              ElementsAre(std::pair{0, 5}, std::pair{5, 10}));
}

TEST(StagePartitionTransformer, TheHeadsTimeTakesBlocksOffTheLastStage) {
  // Equal stages, but the last one's head takes as long as two blocks: 5 and 3 blocks
  // (5 each), where speeds alone would give 4 and 4 (4 against 6).
  const std::vector<StagePace> head_heavy{{1, 0}, {1, 2}};
  EXPECT_THAT(
      ranges(partition_layers(gpt_workload(), 2, {}, head_heavy, pipeline_of(16, head_heavy))),
      ElementsAre(std::pair{0, 6}, std::pair{6, 10}));
}

TEST(StagePartitionTransformer, RejectsBadPaces) {
  EXPECT_THROW(partition_layers(gpt_workload(), 2, {}, {{1, 0}}), std::invalid_argument);
  EXPECT_THROW(partition_layers(gpt_workload(), 2, {}, {{0, 0}, {1, 0}}), std::invalid_argument);
  EXPECT_THROW(partition_layers(gpt_workload(), 2, {}, {{1, -1}, {1, 0}}), std::invalid_argument);
}

TEST(StagePartitionVision, Resnet50ByFlopsIsBalanced) {
  const Workload w = build_workload(find_model_preset("resnet50")->spec, WorkloadShape{});
  const std::vector<LayerRange> r = partition_layers(w, 4, {}, {});
  ASSERT_EQ(r.size(), 4u);
  // Contiguous, covering every layer, none empty.
  EXPECT_EQ(r.front().begin, 0);
  EXPECT_EQ(r.back().end, static_cast<int>(w.layers.size()));
  for (size_t k = 0; k < r.size(); ++k) {
    EXPECT_LT(r[k].begin, r[k].end) << k;
    if (k > 0) {
      EXPECT_EQ(r[k].begin, r[k - 1].end) << k;
    }
  }
  // ResNet-50's 16 bottlenecks are within a factor of two of each other in FLOPs, so a
  // cut at the layer nearest each quarter keeps every stage within 2x of the mean.
  double total = 0;
  std::vector<double> stage(4, 0);
  for (size_t k = 0; k < 4; ++k) {
    for (int i = r[k].begin; i < r[k].end; ++i) {
      stage[k] += w.layers[i].fwd_flops() + w.layers[i].bwd_flops();
    }
    total += stage[k];
  }
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_GT(stage[k], total / 4 / 2) << k;
    EXPECT_LT(stage[k], total / 4 * 2) << k;
  }
}

TEST(StagePartitionVision, SpeedsShiftFlopsToTheFastStage) {
  const Workload w = build_workload(find_model_preset("resnet50")->spec, WorkloadShape{});
  const std::vector<LayerRange> even = partition_layers(w, 2, {}, {});
  const std::vector<LayerRange> fast_first = partition_layers(w, 2, {}, {{1, 0}, {3, 0}});
  EXPECT_GT(fast_first[0].end, even[0].end);
}

TEST(StagePartitionVision, ExplicitCountsAreLayers) {
  const Workload w = build_workload(find_model_preset("resnet50")->spec, WorkloadShape{});
  const int n = static_cast<int>(w.layers.size());
  EXPECT_THAT(ranges(partition_layers(w, 3, {n - 2, 1, 1}, {})),
              ElementsAre(std::pair{0, n - 2}, std::pair{n - 2, n - 1}, std::pair{n - 1, n}));
  EXPECT_THAT(partition_error(w, 2, {1, 1}),
              HasSubstr("the model has " + std::to_string(n) + " layers"));
}

TEST(StagePartitionErrors, NameTheProblem) {
  const Workload w = gpt_workload();
  EXPECT_THAT(partition_error(w, 9, {}),
              HasSubstr("9 pipeline chunks need at least as many transformer layers"));
  EXPECT_THAT(partition_error(w, 4, {2, 2, 4}), HasSubstr("3 entries"));
  EXPECT_THAT(partition_error(w, 3, {1, 0, 7}), HasSubstr("at least 1"));
  EXPECT_THAT(partition_error(w, 2, {3, 4}),
              HasSubstr("sums to 7, the model has 8 transformer layers"));
}

}  // namespace

TEST(MinMaxSplit, GivesEachUnitToThePartDoneFirst) {
  // Equal parts share evenly; ties go to the lower index.
  EXPECT_THAT(min_max_split(7, {0, 0}, {1, 1}), ElementsAre(4, 3));
  // Proportional when nothing is fixed: speeds 3 : 1.
  EXPECT_THAT(min_max_split(8, {0, 0}, {1, 3}), ElementsAre(6, 2));
  // A fixed cost (a collective's latency) on the slow part moves units off it: times
  // 10 + 1 m and 0 + 1 m are level at 1 and 11 of 12 units, not at the even 6 and 6.
  EXPECT_THAT(min_max_split(12, {10, 0}, {1, 1}), ElementsAre(1, 11));
  // Every part keeps one unit, however slow.
  EXPECT_THAT(min_max_split(4, {0, 0, 100}, {1, 1, 100}), ElementsAre(2, 1, 1));
}

TEST(PipelineSplit, WeighsTheSteadyStateAgainstFillAndDrain) {
  // Many micro-batches: the slowest stage rules, as in min_max_split.
  const std::vector<StagePace> paces{{1, 0}, {3, 0}};
  EXPECT_THAT(pipeline_split(8, {0, 0}, {1, 3}, pipeline_of(1000, paces)), ElementsAre(6, 2));
  // Two: one round of steady state and one way through; 7 + 1 costs 7 + (7 + 3) = 17,
  // the level 6 + 2 costs 6 + (6 + 6) = 18.
  EXPECT_THAT(pipeline_split(8, {0, 0}, {1, 3}, pipeline_of(2, paces)), ElementsAre(7, 1));
  // A head as slow as eight blocks on the slow stage leaves it one block.
  EXPECT_THAT(pipeline_split(12, {0, 8}, {1, 4}, pipeline_of(8, {{1, 0}, {4, 8}})),
              ElementsAre(11, 1));
  EXPECT_THROW(pipeline_split(1, {0, 0}, {1, 1}, pipeline_of(4, paces)), std::invalid_argument);
  EXPECT_THROW(pipeline_split(4, {0}, {1, 1}, pipeline_of(4, paces)), std::invalid_argument);
}

// Against every split of up to 12 units over 3 stages, on pseudo-random stage times.
TEST(PipelineSplit, MatchesExhaustiveSearch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> fixed_time(0, 5), unit_time(0.1, 4);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<double> fixed{fixed_time(rng), fixed_time(rng), fixed_time(rng)};
    const std::vector<double> per_unit{unit_time(rng), unit_time(rng), unit_time(rng)};
    const int64_t total = 3 + trial % 10;
    const int64_t rounds = 1 + trial % 7;
    const SplitCost cost = pipeline_of(
        rounds, {{per_unit[0], fixed[0]}, {per_unit[1], fixed[1]}, {per_unit[2], fixed[2]}});
    double best = 1e300;
    for (int64_t a = 1; a < total; ++a) {
      for (int64_t b = 1; a + b < total; ++b) best = std::min(best, cost({a, b, total - a - b}));
    }
    const std::vector<int64_t> got = pipeline_split(total, fixed, per_unit, cost);
    ASSERT_EQ(got[0] + got[1] + got[2], total);
    EXPECT_NEAR(cost(got), best, 1e-9 * best) << "trial " << trial;
  }
}

TEST(MinMaxSplit, RejectsBadInput) {
  EXPECT_THROW(min_max_split(1, {0, 0}, {1, 1}), std::invalid_argument);
  EXPECT_THROW(min_max_split(4, {0}, {1, 1}), std::invalid_argument);
  EXPECT_THROW(min_max_split(4, {-1, 0}, {1, 1}), std::invalid_argument);
}

}  // namespace dtsim::models
