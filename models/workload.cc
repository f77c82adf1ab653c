// The workload graph: names of its enums, sums over layers and ops, and build_workload,
// which checks the spec and the shape and hands the family to its zoo builder.
#include "models/workload.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "models/zoo/zoo.h"

namespace dtsim::models {
namespace {

template <typename Item, typename Value>
double sum_of(const std::vector<Item>& items, Value value) {
  double total = 0;
  for (const Item& item : items) total += value(item);
  return total;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

// Resolves seq_len: the model's default when 0 for transformers, and 1 for the other
// families, which see one sample at a time (so samples * seq_len counts tokens everywhere).
WorkloadShape resolve_shape(const ModelSpec& spec, const WorkloadShape& shape) {
  WorkloadShape resolved = shape;
  if (!is_transformer(spec.family)) {
    resolved.seq_len = 1;
  } else if (resolved.seq_len == 0) {
    resolved.seq_len = spec.seq_len;
  }
  return resolved;
}

std::vector<std::string> shape_problems(const ModelSpec& spec, const WorkloadShape& shape) {
  std::vector<std::string> problems;
  if (shape.micro_batch <= 0) {
    problems.push_back("micro_batch: must be positive, got " + std::to_string(shape.micro_batch));
  }
  if (shape.seq_len < 0) {
    problems.push_back("seq_len: must be 0 (the model's default) or positive, got " +
                       std::to_string(shape.seq_len));
  } else if (is_transformer(spec.family) && shape.seq_len == 0 && spec.seq_len == 0) {
    problems.push_back("seq_len: the model has no default sequence length; set one");
  }
  return problems;
}

std::vector<Layer> build_layers(const ModelSpec& spec, const WorkloadShape& shape) {
  const zoo::BuildShape build{shape.micro_batch, shape.seq_len,
                              static_cast<double>(activation_bytes(shape.precision)),
                              shape.flash_attention};
  switch (spec.family) {
    case ModelFamily::kGpt:
    case ModelFamily::kLlama:
    case ModelFamily::kMoe:
    case ModelFamily::kBert:
      return zoo::transformer_layers(spec, build);
    case ModelFamily::kResnet50:
    case ModelFamily::kResnet:
    case ModelFamily::kAlexnet:
    case ModelFamily::kVgg16:
      return zoo::vision_layers(spec, spec.family, build, true);
    case ModelFamily::kMlp:
      return zoo::mlp_layers(spec, build, true);
    case ModelFamily::kClassifier:
      return zoo::classifier_layers(spec, build);
  }
  return {};
}

}  // namespace

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kMatmul:
      return "matmul";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kConv:
      return "conv";
    case OpKind::kElementwise:
      return "elementwise";
    case OpKind::kNorm:
      return "norm";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kEmbedding:
      return "embedding";
    case OpKind::kPool:
      return "pool";
    case OpKind::kLoss:
      return "loss";
    case OpKind::kRouter:
      return "router";
  }
  return "?";
}

std::string_view tensor_split_name(TensorSplit s) {
  switch (s) {
    case TensorSplit::kReplicated:
      return "replicated";
    case TensorSplit::kSequence:
      return "sequence";
    case TensorSplit::kColumn:
      return "column";
    case TensorSplit::kRow:
      return "row";
    case TensorSplit::kHeads:
      return "heads";
    case TensorSplit::kVocab:
      return "vocab";
  }
  return "?";
}

std::string_view layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::kEmbedding:
      return "embedding";
    case LayerKind::kTransformer:
      return "transformer";
    case LayerKind::kHead:
      return "head";
    case LayerKind::kVision:
      return "vision";
    case LayerKind::kDense:
      return "dense";
    case LayerKind::kClassifier:
      return "classifier";
  }
  return "?";
}

int64_t Layer::params() const {
  int64_t total = 0;
  for (const Op& op : ops) total += op.params;
  return total;
}

double Layer::fwd_flops() const {
  return sum_of(ops, [](const Op& op) { return op.fwd_flops; });
}

double Layer::bwd_flops() const {
  return sum_of(ops, [](const Op& op) { return op.bwd_flops; });
}

int64_t Workload::params() const {
  int64_t total = 0;
  for (const Layer& layer : layers) total += layer.params();
  return total;
}

double Workload::fwd_flops() const {
  return sum_of(layers, [](const Layer& layer) { return layer.fwd_flops(); });
}

double Workload::bwd_flops() const {
  return sum_of(layers, [](const Layer& layer) { return layer.bwd_flops(); });
}

int64_t Workload::tokens_per_sample() const {
  return is_transformer(spec.family) ? shape.seq_len : 1;
}

Workload build_workload(const ModelSpec& spec, const WorkloadShape& shape) {
  std::vector<std::string> problems = validate_model_spec(spec);
  for (std::string& problem : shape_problems(spec, shape)) problems.push_back(std::move(problem));
  if (!problems.empty()) {
    throw std::invalid_argument("model \"" + spec.name + "\": " + join(problems, "; "));
  }
  Workload w;
  w.spec = spec;
  w.shape = resolve_shape(spec, shape);
  w.layers = build_layers(spec, w.shape);
  return w;
}

double model_flops_per_iteration(const Workload& w, int64_t samples) {
  const double per_micro_batch = w.fwd_flops() + w.bwd_flops();
  return per_micro_batch * static_cast<double>(samples) / static_cast<double>(w.shape.micro_batch);
}

}  // namespace dtsim::models
