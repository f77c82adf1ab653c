// Convolutional networks as torchvision defines them: ResNet-50 v1.5 (He et al. 2016, the
// stride on the 3x3 convolution), AlexNet (Krizhevsky 2014, one tower) and VGG-16
// (Simonyan and Zisserman 2015, configuration D). Every convolution is its implicit GEMM;
// batch norm, ReLU and pooling are memory-bound ops.
//
// Saved activations: every convolution, batch norm, pool and linear layer keeps its input;
// ReLU runs in place and keeps its output only where the op after it does not (before a
// dropout, which keeps just its mask); the residual add keeps nothing.
#include <algorithm>
#include <string>
#include <vector>

#include "models/zoo/zoo.h"

namespace dtsim::models::zoo {
namespace {

constexpr int64_t kImageChannels = 3;  // RGB
// Training-mode batch norm: mean, variance (subtract, square, add), normalise, affine.
constexpr double kBatchNormFlops = 8;
// It reads its input twice (statistics, then normalisation) and writes once.
constexpr double kBatchNormTraffic = 3;
// The per-sample loss the network hands on, in fp32.
constexpr double kLossOutputBytes = 4;
// ResNet's bottleneck blocks widen their output to 4x the block's width.
constexpr int64_t kBottleneckExpansion = 4;
// torchvision's adaptive average pools before the classifier: 6x6 (AlexNet), 7x7 (VGG).
constexpr int64_t kAlexnetPooledSize = 6;
constexpr int64_t kVggPooledSize = 7;
constexpr int64_t kFcFeatures = 4096;  // AlexNet's and VGG's fc6 and fc7

struct FeatureMap {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t per_sample() const { return channels * height * width; }
};

int64_t conv_output_size(int64_t in, int kernel, int stride, int pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

// Appends ops to the layer being built while tracking the feature map they produce.
class NetBuilder {
 public:
  NetBuilder(int64_t batch, double act_bytes, FeatureMap input)
      : batch_(batch), act_(act_bytes), map_(input) {}

  const FeatureMap& map() const { return map_; }
  void set_map(const FeatureMap& map) { map_ = map; }

  void conv(std::string name, int64_t out_channels, int kernel, int stride, int pad, bool bias,
            bool keep_input = true) {
    const FeatureMap out{out_channels, conv_output_size(map_.height, kernel, stride, pad),
                         conv_output_size(map_.width, kernel, stride, pad)};
    const int64_t k = map_.channels * kernel * kernel;
    const GemmShape gemm{batch_ * out.height * out.width, out_channels, k, 1};
    const double in_elements = elements();
    Op op = weighted_gemm(std::move(name), OpKind::kConv, TensorSplit::kReplicated, gemm,
                          out_channels * k, bias ? out_channels : 0, in_elements,
                          static_cast<double>(batch_) * out.per_sample(), act_);
    op.conv = ConvDims{batch_, map_.channels, map_.height, map_.width, out_channels,
                       kernel, kernel,        stride,      pad};
    ops_.push_back(keep(std::move(op), keep_input ? in_elements * act_ : 0));
    map_ = out;
  }

  void batch_norm(std::string name) {
    // Statistics per channel: rows of the channels' width (NHWC, as cuDNN runs it).
    Op op =
        run_by(memory_bound_op(std::move(name), OpKind::kNorm, TensorSplit::kReplicated, elements(),
                               kBatchNormFlops, kBatchNormTraffic * act_, map_.channels),
               KernelKind::kBatchNorm);
    op.params = 2 * map_.channels;  // scale and shift
    ops_.push_back(keep(std::move(op), elements() * act_));
  }

  void relu(std::string name, bool keep_output = false) {
    ops_.push_back(
        keep(run_by(memory_bound_op(std::move(name), OpKind::kElementwise, TensorSplit::kReplicated,
                                    elements(), kReluFlops, 2 * act_, map_.per_sample()),
                    KernelKind::kRelu),
             keep_output ? elements() * act_ : 0));
  }

  void max_pool(std::string name, int kernel, int stride, int pad) {
    const FeatureMap out{map_.channels, conv_output_size(map_.height, kernel, stride, pad),
                         conv_output_size(map_.width, kernel, stride, pad)};
    pool(std::move(name), out, static_cast<double>(kernel) * kernel, true);
  }

  // Adaptive average pooling to out_size x out_size (1: global average pooling).
  void avg_pool(std::string name, int64_t out_size, bool keep_input) {
    const FeatureMap out{map_.channels, out_size, out_size};
    const double window =
        static_cast<double>(map_.height) * map_.width / static_cast<double>(out_size * out_size);
    pool(std::move(name), out, window, keep_input);
  }

  void residual_add(std::string name) {
    ops_.push_back(memory_bound_op(std::move(name), OpKind::kElementwise, TensorSplit::kReplicated,
                                   elements(), kAddFlops, 3 * act_, map_.per_sample()));
  }

  void dropout(std::string name) {
    ops_.push_back(keep(
        run_by(memory_bound_op(std::move(name), OpKind::kElementwise, TensorSplit::kReplicated,
                               elements(), kDropoutFlops, 2 * act_ + kMaskBytes, map_.per_sample()),
               KernelKind::kDropout),
        elements() * kMaskBytes));
  }

  // A fully connected layer on the flattened feature map.
  void fully_connected(std::string name, int64_t out_features) {
    const int64_t in_features = map_.per_sample();
    ops_.push_back(keep(models::zoo::linear(std::move(name), TensorSplit::kReplicated, batch_,
                                            in_features, out_features, true, act_),
                        elements() * act_));
    map_ = FeatureMap{out_features, 1, 1};
  }

  void loss(std::string name) {
    ops_.push_back(softmax_cross_entropy(std::move(name), TensorSplit::kReplicated,
                                         static_cast<double>(batch_),
                                         static_cast<double>(map_.per_sample()), act_, act_));
    loss_done_ = true;
  }

  // The ops added since the last layer, as a kVision layer whose output is the current map.
  Layer take_layer(std::string name) {
    Layer layer;
    layer.name = std::move(name);
    layer.kind = LayerKind::kVision;
    layer.ops = std::move(ops_);
    ops_.clear();
    // A bottleneck's shortcut: the projection reads the block's input, and the add reads
    // the main path and the shortcut (projected, or the input itself).
    const bool projected = std::any_of(layer.ops.begin(), layer.ops.end(),
                                       [](const Op& op) { return op.name == "downsample.bn"; });
    read_from(layer, "downsample.conv", {kInput});
    read_from(layer, "add", {"bn_c", projected ? "downsample.bn" : kInput});
    layer.output_bytes =
        loss_done_ ? static_cast<double>(batch_) * kLossOutputBytes : elements() * act_;
    return layer;
  }

 private:
  double elements() const { return static_cast<double>(batch_) * map_.per_sample(); }

  static Op keep(Op op, double bytes) {
    return saving(std::move(op), bytes, TensorSplit::kReplicated);
  }

  void pool(std::string name, const FeatureMap& out, double window, bool keep_input) {
    const double in_elements = elements();
    const double out_elements = static_cast<double>(batch_) * out.per_sample();
    Op op;
    op.name = std::move(name);
    op.kind = OpKind::kPool;
    op.kernel = KernelKind::kPool;
    op.split = TensorSplit::kReplicated;
    op.rows = batch_;
    op.width = out.per_sample();
    op.fwd_flops = out_elements * window;  // a compare or an add per window element
    op.bwd_flops = in_elements;            // route or spread the gradient back
    op.fwd_bytes = (in_elements + out_elements) * act_;
    op.bwd_bytes = 2 * op.fwd_bytes;
    ops_.push_back(keep(std::move(op), keep_input ? in_elements * act_ : 0));
    map_ = out;
  }

  int64_t batch_;
  double act_;
  FeatureMap map_;
  std::vector<Op> ops_;
  bool loss_done_ = false;
};

NetBuilder input_builder(const ModelSpec& spec, const BuildShape& shape) {
  return NetBuilder(shape.batch, shape.act_bytes,
                    FeatureMap{kImageChannels, spec.image_size, spec.image_size});
}

// conv_a 1x1 to `width`, conv_b 3x3 (strided), conv_c 1x1 to 4 * width; the first block of
// a stage projects its input with a strided 1x1 convolution to match.
void bottleneck(NetBuilder& net, int64_t width, int stride, bool project_shortcut) {
  const FeatureMap input = net.map();
  net.conv("conv_a", width, 1, 1, 0, false);
  net.batch_norm("bn_a");
  net.relu("relu_a");
  net.conv("conv_b", width, 3, stride, 1, false);
  net.batch_norm("bn_b");
  net.relu("relu_b");
  net.conv("conv_c", kBottleneckExpansion * width, 1, 1, 0, false);
  net.batch_norm("bn_c");
  if (project_shortcut) {
    const FeatureMap main_path = net.map();
    net.set_map(input);
    // Its input, the block's input, is kept by conv_a already.
    net.conv("downsample.conv", kBottleneckExpansion * width, 1, stride, 0, false, false);
    net.batch_norm("downsample.bn");
    net.set_map(main_path);
  }
  net.residual_add("add");
  net.relu("relu_out");
}

std::vector<Layer> resnet50(const ModelSpec& spec, const BuildShape& shape, bool head) {
  struct Stage {
    const char* name;
    int64_t width;
    int blocks;
    int stride;
  };
  constexpr Stage kStages[] = {{"conv2_x", 64, 3, 1},
                               {"conv3_x", 128, 4, 2},
                               {"conv4_x", 256, 6, 2},
                               {"conv5_x", 512, 3, 2}};
  std::vector<Layer> layers;
  NetBuilder net = input_builder(spec, shape);
  net.conv("conv1", 64, 7, 2, 3, false);
  net.batch_norm("bn1");
  net.relu("relu");
  net.max_pool("maxpool", 3, 2, 1);
  layers.push_back(net.take_layer("stem"));
  for (const Stage& stage : kStages) {
    for (int i = 0; i < stage.blocks; ++i) {
      bottleneck(net, stage.width, i == 0 ? stage.stride : 1, i == 0);
      layers.push_back(net.take_layer(std::string(stage.name) + "." + std::to_string(i)));
    }
  }
  // The global pool keeps its input: the last block's ReLU output, which that ReLU needs.
  net.avg_pool("avgpool", 1, true);
  if (!head) {
    layers.push_back(net.take_layer("pool"));
    return layers;
  }
  net.fully_connected("fc", spec.classes);
  net.loss("loss");
  layers.push_back(net.take_layer("head"));
  return layers;
}

std::vector<Layer> alexnet(const ModelSpec& spec, const BuildShape& shape, bool head) {
  struct Conv {
    const char* name;
    int64_t channels;
    int kernel;
    int stride;
    int pad;
    bool pool;
  };
  constexpr Conv kConvs[] = {{"conv1", 64, 11, 4, 2, true},
                             {"conv2", 192, 5, 1, 2, true},
                             {"conv3", 384, 3, 1, 1, false},
                             {"conv4", 256, 3, 1, 1, false},
                             {"conv5", 256, 3, 1, 1, true}};
  std::vector<Layer> layers;
  NetBuilder net = input_builder(spec, shape);
  for (const Conv& c : kConvs) {
    net.conv("conv", c.channels, c.kernel, c.stride, c.pad, true);
    net.relu("relu");
    if (c.pool) net.max_pool("maxpool", 3, 2, 0);
    if (std::string(c.name) == "conv5") net.avg_pool("avgpool", kAlexnetPooledSize, false);
    layers.push_back(net.take_layer(c.name));
  }
  for (const char* name : {"fc6", "fc7"}) {
    net.dropout("dropout");
    net.fully_connected("fc", kFcFeatures);
    // fc6's ReLU feeds a dropout, which keeps only its mask.
    net.relu("relu", std::string(name) == "fc6");
    layers.push_back(net.take_layer(name));
  }
  if (head) {
    net.fully_connected("fc", spec.classes);
    net.loss("loss");
    layers.push_back(net.take_layer("fc8"));
  }
  return layers;
}

std::vector<Layer> vgg16(const ModelSpec& spec, const BuildShape& shape, bool head) {
  // Configuration D: blocks of 3x3 convolutions, each block followed by a 2x2 max pool.
  struct Block {
    int64_t channels;
    int convs;
  };
  constexpr Block kBlocks[] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  constexpr int kBlockCount = 5;
  std::vector<Layer> layers;
  NetBuilder net = input_builder(spec, shape);
  for (int b = 0; b < kBlockCount; ++b) {
    for (int i = 0; i < kBlocks[b].convs; ++i) {
      net.conv("conv", kBlocks[b].channels, 3, 1, 1, true);
      net.relu("relu");
      const bool last_in_block = i + 1 == kBlocks[b].convs;
      if (last_in_block) net.max_pool("maxpool", 2, 2, 0);
      if (last_in_block && b + 1 == kBlockCount) net.avg_pool("avgpool", kVggPooledSize, false);
      layers.push_back(
          net.take_layer("conv" + std::to_string(b + 1) + "_" + std::to_string(i + 1)));
    }
  }
  for (const char* name : {"fc6", "fc7"}) {
    net.fully_connected("fc", kFcFeatures);
    net.relu("relu", true);  // feeds a dropout, which keeps only its mask
    net.dropout("dropout");
    layers.push_back(net.take_layer(name));
  }
  if (head) {
    net.fully_connected("fc", spec.classes);
    net.loss("loss");
    layers.push_back(net.take_layer("fc8"));
  }
  return layers;
}

}  // namespace

int64_t vision_feature_count(ModelFamily family) {
  return family == ModelFamily::kResnet50 ? kBottleneckExpansion * 512 : kFcFeatures;
}

int min_image_size(ModelFamily family) { return family == ModelFamily::kAlexnet ? 63 : 32; }

std::vector<Layer> vision_layers(const ModelSpec& spec, ModelFamily family, const BuildShape& shape,
                                 bool classification_head) {
  switch (family) {
    case ModelFamily::kResnet50:
      return resnet50(spec, shape, classification_head);
    case ModelFamily::kAlexnet:
      return alexnet(spec, shape, classification_head);
    case ModelFamily::kVgg16:
      return vgg16(spec, shape, classification_head);
    default:
      return {};
  }
}

}  // namespace dtsim::models::zoo
