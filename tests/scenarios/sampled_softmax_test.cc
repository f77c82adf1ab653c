// A sharded classifier with sampled softmax in a lowered step, worked by hand: every rank
// keeps its whole shard of class centres and their optimizer state, and the gradients and
// the update of the centres it samples.
#include <gtest/gtest.h>

#include <string>

#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using test_support::prepare;

// 8 GPUs, a ResNet-50 backbone with a 512-wide embedding, 1,000,000 classes sharded over
// the 8: 513 x 1,000,000 / 8 = 64,125,000 classifier parameters a rank.
nlohmann::json face(double sample_rate) {
  auto s = nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 1, "device": "A100-80GB", "devices_per_node": 8,
                           "nic_bandwidth": "200Gbps"}]},
    "simulation": {"trace": false},
    "model": {"family": "classifier", "backbone": "resnet50", "image_size": 112,
              "hidden": 2048, "embedding": 512, "classes": 1000000},
    "training": {"global_batch": 256, "micro_batch": 32, "precision": "fp16", "optimizer": "sgd"},
    "parallelism": {"shard_classifier": true}})");
  s["model"]["sample_rate"] = sample_rate;
  return s;
}

int64_t optimizer_width(const TaskGraph& g, int rank) {
  for (const TaskView t : g.tasks()) {
    if (t.rank != rank || t.kind != TaskKind::kCompute || t.name != "optimizer") continue;
    for (const OpSignature& op : g.op_list(t.ops)) {
      if (op.kind == KernelKind::kOptimizerUpdate) return op.width;
    }
  }
  return -1;
}

TEST(SampledSoftmax, EveryCentreKeptOnlyTheSampledOnesUpdated) {
  const auto full = prepare(face(1.0));
  const auto sampled = prepare(face(0.1));
  constexpr double kShard = 513.0 * 1000000 / 8;
  // fp16 with SGD: 2 bytes of gradient a parameter; 90% of the shard's gradients are gone.
  const auto& a = full->lowered.training->step.roles[0];
  const auto& b = sampled->lowered.training->step.roles[0];
  EXPECT_EQ(a.params, b.params);
  EXPECT_NEAR(a.model_state_bytes - b.model_state_bytes, 2 * 0.9 * kShard, 1);
  // The optimizer steps over the sampled centres only (and the whole replicated backbone).
  EXPECT_NEAR(static_cast<double>(optimizer_width(full->lowered.graph, 0) -
                                  optimizer_width(sampled->lowered.graph, 0)),
              0.9 * kShard, 1);
  EXPECT_LT(sampled->lowered.training->step.model_flops_per_iteration,
            full->lowered.training->step.model_flops_per_iteration);
}

TEST(SampledSoftmax, SamplingNeedsTheShardedClassifier) {
  auto s = face(0.1);
  s["parallelism"] = nlohmann::json::object();
  try {
    prepare(s, "t.json");
    FAIL() << "expected an error";
  } catch (const ScenarioError& e) {
    ASSERT_FALSE(e.messages().empty());
    EXPECT_NE(e.messages()[0].find("/model/sample_rate"), std::string::npos) << e.messages()[0];
    EXPECT_NE(e.messages()[0].find("shard_classifier"), std::string::npos) << e.messages()[0];
  }
}

}  // namespace
}  // namespace dtsim
