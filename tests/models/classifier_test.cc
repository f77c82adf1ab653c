// Huge classifiers, worked by hand: an embedding of any width on the backbone, and sampled
// softmax (Partial FC's sampling rate, KNN softmax's candidates) — which classes a step's
// GEMM and softmax cover, what it gathers, what it owns and what it updates.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "models/model_spec.h"
#include "models/workload.h"

namespace dtsim::models {
namespace {

ModelSpec classifier(int64_t classes) {
  ModelSpec s;
  s.name = "face";
  s.family = ModelFamily::kClassifier;
  s.backbone = "resnet50";
  s.image_size = 112;
  s.hidden = 2048;
  s.embedding = 512;
  s.classes = classes;
  return s;
}

Workload build(const ModelSpec& spec, int64_t batch = 64) {
  return build_workload(spec, WorkloadShape{batch, 0, Precision::kFp16});
}

const Op* find(const Layer& l, std::string_view name) {
  for (const Op& op : l.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(Classifier, AnEmbeddingOfAnyWidthBetweenBackboneAndClasses) {
  const Workload w = build(classifier(1000000));
  const Layer& embedding = w.layers[w.layers.size() - 2];
  const Layer& head = w.layers.back();
  ASSERT_EQ(embedding.name, "embedding");
  EXPECT_EQ(find(embedding, "fc")->gemm, (GemmDims{64, 512, 2048, 1, false, true}));
  EXPECT_EQ(find(embedding, "fc")->params, 2048 * 512);
  EXPECT_EQ(find(embedding, "bn")->kernel, KernelKind::kBatchNorm);
  EXPECT_EQ(find(embedding, "bn")->params, 2 * 512);
  EXPECT_DOUBLE_EQ(embedding.output_bytes, 64.0 * 512 * 2);
  ASSERT_EQ(head.name, "classifier");
  EXPECT_EQ(find(head, "fc")->gemm.k, 512);
  EXPECT_EQ(find(head, "fc")->params, 513 * 1000000);  // weights and a bias per class
  EXPECT_DOUBLE_EQ(head.tp_comm_bytes, 64.0 * 512 * 2);
  EXPECT_EQ(find(head, "sample"), nullptr);  // the full softmax samples nothing
  // Without an embedding the classes read the 2,048 features, as before.
  ModelSpec plain = classifier(1000);
  plain.embedding = 0;
  EXPECT_EQ(find(build(plain).layers.back(), "fc")->gemm.k, 2048);
}

// Partial FC at 0.1 of 1,000,000 classes: 100,000 centres enter the GEMM and the softmax;
// they are gathered (513 values each, read and written in fp16) and only they are updated.
TEST(Classifier, PartialFcSamplesTheCentresAStepUses) {
  ModelSpec spec = classifier(1000000);
  spec.sample_rate = 0.1;
  const Workload w = build(spec);
  const Layer& head = w.layers.back();
  const Op& fc = *find(head, "fc");
  EXPECT_EQ(fc.gemm.n, 100000);
  EXPECT_DOUBLE_EQ(fc.fwd_flops, 2.0 * 64 * 512 * 100000);
  EXPECT_EQ(fc.params, 513 * 1000000);
  EXPECT_DOUBLE_EQ(fc.updated_fraction, 0.1);
  const Op& gather = *find(head, "sample");
  EXPECT_EQ(gather.kernel, KernelKind::kPermute);
  EXPECT_EQ(gather.split, TensorSplit::kVocab);
  EXPECT_DOUBLE_EQ(gather.fwd_bytes, 2.0 * 100000 * 513 * 2);
  const Op& loss = *find(head, "loss");
  EXPECT_DOUBLE_EQ(loss.saved_bytes, 64.0 * 100000 * 2);  // fp16 probabilities
}

// KNN softmax: the union of each sample's candidates, at most batch x candidates classes.
TEST(Classifier, KnnSoftmaxCoversTheCandidatesUnion) {
  ModelSpec spec = classifier(1000000);
  spec.knn_candidates = 100;
  EXPECT_EQ(spec.sampled_classes(64), 6400);
  const Workload w = build(spec);
  const Op& fc = *find(w.layers.back(), "fc");
  EXPECT_EQ(fc.gemm.n, 6400);
  EXPECT_DOUBLE_EQ(fc.updated_fraction, 0.0064);
  // Candidates of a large batch cover every class: nothing left to sample.
  spec.classes = 5000;
  EXPECT_EQ(spec.sampled_classes(64), 5000);
  EXPECT_EQ(find(build(spec).layers.back(), "sample"), nullptr);
}

TEST(Classifier, SamplingErrors) {
  ModelSpec spec = classifier(1000);
  spec.sample_rate = 1.5;
  EXPECT_EQ(validate_model_spec(spec),
            (std::vector<std::string>{"sample_rate: must be in (0, 1] (the share of each shard's "
                                      "class centres a step samples), got 1.5"}));
  spec.sample_rate = 0.5;
  spec.knn_candidates = 10;
  EXPECT_EQ(validate_model_spec(spec).size(), 1u);
  spec.sample_rate = 1;
  spec.knn_candidates = 2000;
  EXPECT_EQ(validate_model_spec(spec),
            (std::vector<std::string>{"knn_candidates: must not exceed classes (1000), got 2000"}));
}

}  // namespace
}  // namespace dtsim::models
