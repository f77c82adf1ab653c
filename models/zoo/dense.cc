// Fully connected models: the multi-layer perceptron, and the large classifier (a backbone,
// then one fully connected layer over up to 1e8 classes split across the tensor-parallel
// group by classes, as in Song et al., KDD 2020).
#include <string>
#include <vector>

#include "models/zoo/zoo.h"
#include "sim/check.h"

namespace dtsim::models::zoo {
namespace {

// The per-sample loss a network hands on, in fp32.
constexpr double kLossOutputBytes = 4;
// BatchNorm1d: mean, variance, normalise, scale and shift (as the vision zoo's batch norm).
constexpr double kBatchNorm1dFlops = 8;

// Input of `in` features, then fully connected + ReLU to spec.hidden, `spec.layers` times.
// Each linear layer keeps its input; ReLU runs in place and its output is the next linear
// layer's kept input.
std::vector<Layer> hidden_layers(const ModelSpec& spec, const BuildShape& shape) {
  std::vector<Layer> layers;
  int64_t in = spec.input_features;
  for (int i = 0; i < spec.layers; ++i) {
    Layer layer;
    layer.name = "fc." + std::to_string(i);
    layer.kind = LayerKind::kDense;
    const double in_elements = static_cast<double>(shape.batch) * in;
    const double out_elements = static_cast<double>(shape.batch) * spec.hidden;
    layer.ops.push_back(saving(
        linear("fc", TensorSplit::kReplicated, shape.batch, in, spec.hidden, true, shape.act_bytes),
        in_elements * shape.act_bytes, TensorSplit::kReplicated));
    layer.ops.push_back(
        run_by(memory_bound_op("relu", OpKind::kElementwise, TensorSplit::kReplicated, out_elements,
                               kReluFlops, 2 * shape.act_bytes, spec.hidden),
               KernelKind::kRelu));
    layer.output_bytes = out_elements * shape.act_bytes;
    layers.push_back(std::move(layer));
    in = spec.hidden;
  }
  return layers;
}

// A fully connected layer from `width` features to spec.classes and the softmax loss.
Layer output_layer(const ModelSpec& spec, const BuildShape& shape, std::string name, LayerKind kind,
                   TensorSplit split, int64_t width) {
  const double batch = static_cast<double>(shape.batch);
  Layer layer;
  layer.name = std::move(name);
  layer.kind = kind;
  layer.ops.push_back(
      saving(linear("fc", split, shape.batch, width, spec.classes, true, shape.act_bytes),
             batch * width * shape.act_bytes, TensorSplit::kReplicated));
  layer.ops.push_back(softmax_cross_entropy("loss", split, batch, static_cast<double>(spec.classes),
                                            shape.act_bytes, shape.act_bytes));
  layer.output_bytes = batch * kLossOutputBytes;
  return layer;
}

// The classifier's own layer: its GEMM and softmax over the classes a step samples (all of
// them without sampling). The sampled centres are gathered from the shard's whole matrix
// into a working copy (a gather of rows, `width` wide), and in the backward pass their
// gradients are scattered back; only they are updated. The layer owns every centre.
Layer classifier_layer(const ModelSpec& spec, const BuildShape& shape, int64_t width) {
  const int64_t sampled = spec.sampled_classes(shape.batch);
  ModelSpec used = spec;
  used.classes = sampled;
  Layer layer = output_layer(used, shape, "classifier", LayerKind::kClassifier,
                             TensorSplit::kVocab, width);
  Op& fc = layer.ops.front();
  fc.params = (width + 1) * spec.classes;  // weights and biases of every class
  if (sampled < spec.classes) {
    fc.updated_fraction = static_cast<double>(sampled) / static_cast<double>(spec.classes);
    // Rows of one centre each; the class split divides them, so they are the width here.
    Op gather = run_by(memory_bound_op("sample", OpKind::kElementwise, TensorSplit::kVocab,
                                       static_cast<double>(sampled) * (width + 1), 0,
                                       2 * shape.act_bytes, sampled),
                       KernelKind::kPermute);
    layer.ops.insert(layer.ops.begin(), std::move(gather));
  }
  return layer;
}

// Backbone features to a `spec.embedding`-wide embedding: a fully connected layer without
// bias and a batch norm, replicated like the backbone (data parallel).
Layer embedding_layer(const ModelSpec& spec, const BuildShape& shape) {
  const double elements = static_cast<double>(shape.batch) * spec.embedding;
  Layer layer;
  layer.name = "embedding";
  layer.kind = LayerKind::kDense;
  layer.ops.push_back(saving(linear("fc", TensorSplit::kReplicated, shape.batch, spec.hidden,
                                    spec.embedding, false, shape.act_bytes),
                             static_cast<double>(shape.batch) * spec.hidden * shape.act_bytes,
                             TensorSplit::kReplicated));
  Op norm = run_by(memory_bound_op("bn", OpKind::kNorm, TensorSplit::kReplicated, elements,
                                   kBatchNorm1dFlops, 3 * shape.act_bytes, spec.embedding),
                   KernelKind::kBatchNorm);
  norm.params = 2 * spec.embedding;
  layer.ops.push_back(saving(std::move(norm), elements * shape.act_bytes, TensorSplit::kReplicated));
  layer.output_bytes = elements * shape.act_bytes;
  return layer;
}

}  // namespace

int vocab_logits(const Layer& layer) {
  for (size_t i = 0; i < layer.ops.size(); ++i) {
    const Op& op = layer.ops[i];
    if (op.kind == OpKind::kMatmul && op.split == TensorSplit::kVocab) return static_cast<int>(i);
  }
  throw InternalError(__FILE__, __LINE__,
                      ("layer " + layer.name + " has no vocabulary-split GEMM").c_str(),
                      "vocab_logits");
}

std::vector<Layer> mlp_layers(const ModelSpec& spec, const BuildShape& shape,
                              bool classification_head) {
  std::vector<Layer> layers = hidden_layers(spec, shape);
  if (classification_head) {
    layers.push_back(output_layer(spec, shape, "output", LayerKind::kDense,
                                  TensorSplit::kReplicated, spec.hidden));
  }
  return layers;
}

std::vector<Layer> classifier_layers(const ModelSpec& spec, const BuildShape& shape) {
  const ModelFamily backbone = model_family_from_name(spec.backbone).value_or(ModelFamily::kMlp);
  std::vector<Layer> layers = backbone == ModelFamily::kMlp
                                  ? mlp_layers(spec, shape, false)
                                  : vision_layers(spec, backbone, shape, false);
  const int64_t width = spec.embedding > 0 ? spec.embedding : spec.hidden;
  if (spec.embedding > 0) layers.push_back(embedding_layer(spec, shape));
  // Split by classes: every rank holds the whole feature vector and a slice of the classes.
  Layer classifier = classifier_layer(spec, shape, width);
  // Like an LM head: the features' gradient is summed over the group in the backward pass
  // (the softmax's small all-reduces of maxima and sums are left out).
  classifier.tp_bwd_at = {vocab_logits(classifier)};
  classifier.tp_comm_bytes = static_cast<double>(shape.batch) * width * shape.act_bytes;
  layers.push_back(std::move(classifier));
  return layers;
}

}  // namespace dtsim::models::zoo
