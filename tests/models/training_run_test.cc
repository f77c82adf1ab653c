// A whole run's parts, worked by hand: steps, an input pipeline slower than the step,
// evaluation passes, checkpoint writes and start-up; the forward's share of a step.
#include "models/training_run.h"

#include <gtest/gtest.h>

#include "models/workload.h"

namespace dtsim::models {
namespace {

// 1,000 steps of 0.5 s, 2,048 samples each, on 4 nodes.
RunStep step() {
  RunStep s;
  s.iterations = 1000;
  s.iteration_s = 0.5;
  s.samples_per_iteration = 2048;
  s.nodes = 4;
  s.checkpoint_bytes = 16e9;
  s.eval_s_per_sample = 1e-4;
  return s;
}

TEST(TrainingRun, StepsAloneWithoutTheOtherParts) {
  const RunParts p = training_run_parts(RunSetup{}, step());
  EXPECT_DOUBLE_EQ(p.steps, 500);
  EXPECT_DOUBLE_EQ(p.total(), 500);
  EXPECT_FALSE(p.input_bound);
}

TEST(TrainingRun, EachPartFromItsInputs) {
  RunSetup run;
  run.startup = Duration::from_seconds(120);
  run.checkpoint_every = 300;  // 3 writes of 16 GB at 4 x 2 GB/s: 2 s each
  run.checkpoint_write_bandwidth = Bandwidth::gb_per_s(2);
  run.eval_every = 400;  // 2 passes of 50,000 samples at 0.1 ms: 5 s each
  run.eval_samples = 50000;
  // 4 nodes x 32 cores x 20 samples/s = 2,560 samples/s: 0.8 s of input a 0.5 s step.
  run.input_samples_per_s_per_core = 20;
  run.input_cores_per_node = 32;
  const RunParts p = training_run_parts(run, step());
  EXPECT_DOUBLE_EQ(p.startup, 120);
  EXPECT_DOUBLE_EQ(p.checkpoint, 3 * 2.0);
  EXPECT_DOUBLE_EQ(p.eval, 2 * 5.0);
  EXPECT_TRUE(p.input_bound);
  EXPECT_NEAR(p.input_wait, 1000 * (0.8 - 0.5), 1e-9);
  EXPECT_NEAR(p.total(), 500 + 300 + 10 + 6 + 120, 1e-9);
  // A faster pipeline (GPU decoding, 2,000 samples/s a node) does not bind.
  run.input_samples_per_s_per_core = 0;
  run.input_cores_per_node = 0;
  run.input_samples_per_s_per_node = 2000;
  EXPECT_FALSE(training_run_parts(run, step()).input_bound);
}

// GPT: every GEMM's backward is twice its forward, so the forward is about a third of a
// step; full recomputation runs the blocks' forward again, about a quarter.
TEST(TrainingRun, ForwardShareOfAStep) {
  ModelSpec s;
  s.name = "gpt";
  s.family = ModelFamily::kGpt;
  s.layers = 4;
  s.hidden = 1024;
  s.heads = 16;
  s.vocab = 1000;
  const Workload w = build_workload(s, WorkloadShape{1, 512, Precision::kBf16, true});
  EXPECT_NEAR(forward_share(w, Recompute::kNone), 1.0 / 3, 0.02);
  EXPECT_NEAR(forward_share(w, Recompute::kFull), 1.0 / 4, 0.02);
  EXPECT_LT(forward_share(w, Recompute::kFull), forward_share(w, Recompute::kNone));
}

}  // namespace
}  // namespace dtsim::models
