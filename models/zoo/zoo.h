// The model zoo's internal interface: one layer builder per family group, and the op
// constructors they share (GEMMs with weights, memory-bound ops, the softmax loss).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/model_spec.h"
#include "models/workload.h"

namespace dtsim::models::zoo {

// What every builder needs besides the spec: one micro-batch of `batch` samples.
struct BuildShape {
  int64_t batch = 1;
  int64_t seq_len = 0;   // tokens per sample (transformers)
  double act_bytes = 2;  // one stored activation or working-copy weight element
  bool flash_attention = false;  // transformers: fused attention, see WorkloadShape
};

// gpt, llama, moe, bert: the embedding layer, `layers` blocks "block.<i>", the head.
std::vector<Layer> transformer_layers(const ModelSpec& spec, const BuildShape& shape);

// resnet50, resnet, alexnet, vgg16 on spec.image_size images (family: the model's, or a
// classifier's backbone). With `classification_head` the network ends in its fc classifier
// and softmax loss over spec.classes; without it, at the feature vector
// (vision_feature_count wide) that a separate classifier takes.
std::vector<Layer> vision_layers(const ModelSpec& spec, ModelFamily family, const BuildShape& shape,
                                 bool classification_head);
// 2048 for resnet50 (after global average pooling), 4096 for alexnet and vgg16 (fc7); a
// resnet's last stage's channels, or its last map whole under FeaturePool::kFlatten.
int64_t vision_feature_count(const ModelSpec& spec, ModelFamily family);
// The smallest input resolution the zoo accepts: 32 for the five halvings of resnet50 and
// vgg16, 63 for AlexNet (its stride-4 stem and three 3x3 stride-2 pools), 1 for a resnet
// (its padded convolutions leave a map of any image).
int min_image_size(ModelFamily family);

// mlp: `layers` fully connected layers of spec.hidden units; with `classification_head`
// an output layer of spec.classes and the softmax loss.
std::vector<Layer> mlp_layers(const ModelSpec& spec, const BuildShape& shape,
                              bool classification_head);
// classifier: the backbone's layers without its head, then one kClassifier layer.
std::vector<Layer> classifier_layers(const ModelSpec& spec, const BuildShape& shape);

// The index of the layer's vocabulary- (or class-) split GEMM: the logits, whose input
// gradient is summed over the tensor-parallel group. Checked to exist.
int vocab_logits(const Layer& layer);

// Data flow: op `op` of `layer` reads the results of `inputs`, ops of the layer by name
// (kInput: the layer's input; kPrevious: the op before it), in its kernel's input order.
// Nothing when the layer has no op `op`; an input it lacks is an internal error.
inline constexpr std::string_view kInput = "(input)";
inline constexpr std::string_view kPrevious = "(previous)";
void read_from(Layer& layer, std::string_view op, std::initializer_list<std::string_view> inputs);

// FLOPs per element of memory-bound ops in the forward pass; backward does about twice as
// many. They are small next to the GEMMs but keep the vector-unit work visible.
inline constexpr double kAddFlops = 1;
inline constexpr double kReluFlops = 1;
inline constexpr double kDropoutFlops = 2;       // compare with a random number, scale
inline constexpr double kCrossEntropyFlops = 5;  // max, subtract, exp, sum, pick the label
// A dropout mask keeps one byte per element (PyTorch's bool mask).
inline constexpr double kMaskBytes = 1;

// A GEMM that owns `weights` weight and `biases` bias elements: a linear layer, or a
// convolution as its implicit GEMM. Forward traffic reads the input and the weights and
// writes the output once each (element counts for the whole op). The backward pass runs
// two GEMMs of the forward's size (input gradient and weight gradient): twice the FLOPs
// and twice the bytes.
inline Op weighted_gemm(std::string name, OpKind kind, TensorSplit split, const GemmShape& gemm,
                        int64_t weights, int64_t biases, double input_elements,
                        double output_elements, double act_bytes) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.kernel = kind == OpKind::kConv     ? KernelKind::kConv
              : kind == OpKind::kRouter ? KernelKind::kRouter
                                        : KernelKind::kGemm;
  op.split = split;
  op.gemm = gemm;
  op.gemm.transpose_b = true;  // weights stored [out, in]
  op.params = weights + biases;
  op.fwd_flops = gemm.flops();
  op.bwd_flops = 2 * op.fwd_flops;
  op.fwd_bytes = (input_elements + output_elements + static_cast<double>(weights)) * act_bytes;
  op.bwd_bytes = 2 * op.fwd_bytes;
  return op;
}

// A linear layer on `rows` rows: y[rows, out] = x[rows, in] W[in, out] (+ bias).
inline Op linear(std::string name, TensorSplit split, int64_t rows, int64_t in, int64_t out,
                 bool bias, double act_bytes) {
  return weighted_gemm(std::move(name), OpKind::kMatmul, split, GemmShape{rows, out, in, 1},
                       in * out, bias ? out : 0, static_cast<double>(rows) * in,
                       static_cast<double>(rows) * out, act_bytes);
}

// The kernel that runs a memory-bound op of `kind` unless its builder names a finer one
// (RMSNorm, GeLU, ...).
inline KernelKind default_kernel(OpKind kind) {
  switch (kind) {
    case OpKind::kNorm:
      return KernelKind::kLayerNorm;
    case OpKind::kSoftmax:
      return KernelKind::kSoftmax;
    case OpKind::kEmbedding:
      return KernelKind::kEmbedding;
    case OpKind::kPool:
      return KernelKind::kPool;
    case OpKind::kLoss:
      return KernelKind::kCrossEntropy;
    case OpKind::kRouter:
      return KernelKind::kRouter;
    case OpKind::kMatmul:
      return KernelKind::kGemm;
    case OpKind::kAttention:
      return KernelKind::kBatchedGemm;
    case OpKind::kConv:
      return KernelKind::kConv;
    case OpKind::kElementwise:
      return KernelKind::kElementwise;
  }
  return KernelKind::kElementwise;
}

// A memory-bound op over `elements` elements, `width` to a row, with `flops_per_element`
// FLOPs and `bytes_per_element` bytes of HBM traffic (every tensor it reads and writes) per
// element in the forward pass. The backward pass reads the output gradient besides what
// the forward read: about twice the bytes and the arithmetic.
inline Op memory_bound_op(std::string name, OpKind kind, TensorSplit split, double elements,
                          double flops_per_element, double bytes_per_element, int64_t width) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.kernel = default_kernel(kind);
  op.split = split;
  op.width = width;
  op.rows = width > 0 ? std::llround(elements / static_cast<double>(width)) : 0;
  op.fwd_flops = elements * flops_per_element;
  op.bwd_flops = 2 * op.fwd_flops;
  op.fwd_bytes = elements * bytes_per_element;
  op.bwd_bytes = 2 * op.fwd_bytes;
  return op;
}

// The op, keeping `bytes` of activations for its backward pass, divided as `split` says.
inline Op saving(Op op, double bytes, TensorSplit split) {
  op.saved_bytes = bytes;
  op.saved_split = split;
  return op;
}

// Softmax with cross-entropy over `rows` x `classes` logits: reads the logits, writes the
// probabilities (`prob_bytes` each) and keeps them for the backward pass.
inline Op softmax_cross_entropy(std::string name, TensorSplit split, double rows, double classes,
                                double act_bytes, double prob_bytes) {
  const double elements = rows * classes;
  return saving(memory_bound_op(std::move(name), OpKind::kLoss, split, elements, kCrossEntropyFlops,
                                act_bytes + prob_bytes, static_cast<int64_t>(classes)),
                elements * prob_bytes, split);
}

// The op, run by `kernel`.
inline Op run_by(Op op, KernelKind kernel) {
  op.kernel = kernel;
  return op;
}

}  // namespace dtsim::models::zoo
