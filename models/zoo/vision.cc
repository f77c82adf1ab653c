// Convolutional networks as torchvision defines them: ResNet-50 v1.5 (He et al. 2016, the
// stride on the 3x3 convolution) and ResNets of any stage list (basic or bottleneck blocks,
// any stem), AlexNet (Krizhevsky 2014, one tower) and VGG-16
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
    const bool bottleneck = std::any_of(layer.ops.begin(), layer.ops.end(),
                                        [](const Op& op) { return op.name == "bn_c"; });
    read_from(layer, "add", {bottleneck ? "bn_c" : "bn_b", projected ? "downsample.bn" : kInput});
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

// The shortcut's projection (a strided 1x1 convolution and batch norm, run on the block's
// input) where the block changes the map's shape, as torchvision projects it; then the
// residual add and the block's ReLU.
void shortcut_and_add(NetBuilder& net, const FeatureMap& input, int stride) {
  if (stride != 1 || input.channels != net.map().channels) {
    const FeatureMap main_path = net.map();
    net.set_map(input);
    // Its input, the block's input, is kept by conv_a already.
    net.conv("downsample.conv", main_path.channels, 1, stride, 0, false, false);
    net.batch_norm("downsample.bn");
    net.set_map(main_path);
  }
  net.residual_add("add");
  net.relu("relu_out");
}

// conv_a 1x1 to `width`, conv_b 3x3 (strided), conv_c 1x1 to 4 * width.
void bottleneck(NetBuilder& net, int64_t width, int stride) {
  const FeatureMap input = net.map();
  net.conv("conv_a", width, 1, 1, 0, false);
  net.batch_norm("bn_a");
  net.relu("relu_a");
  net.conv("conv_b", width, 3, stride, 1, false);
  net.batch_norm("bn_b");
  net.relu("relu_b");
  net.conv("conv_c", kBottleneckExpansion * width, 1, 1, 0, false);
  net.batch_norm("bn_c");
  shortcut_and_add(net, input, stride);
}

// conv_a 3x3 (strided) and conv_b 3x3, both of `width`.
void basic_block(NetBuilder& net, int64_t width, int stride) {
  const FeatureMap input = net.map();
  net.conv("conv_a", width, 3, stride, 1, false);
  net.batch_norm("bn_a");
  net.relu("relu_a");
  net.conv("conv_b", width, 3, 1, 1, false);
  net.batch_norm("bn_b");
  shortcut_and_add(net, input, stride);
}

// He et al. 2016, Table 1: conv2_x to conv5_x of ResNet-50.
std::vector<CnnStage> resnet50_stages() {
  const auto stage = [](int blocks, int64_t width, int stride) {
    return CnnStage{blocks, width, stride, ResnetBlock::kBottleneck};
  };
  return {stage(3, 64, 1), stage(4, 128, 2), stage(6, 256, 2), stage(3, 512, 2)};
}

// What a resnet is built from: the spec's stages, stem and pooling, or ResNet-50's for the
// resnet50 family (ImageNet's stem, global average pooling).
struct ResnetLayout {
  const std::vector<CnnStage>& stages;
  CnnStem stem;
  FeaturePool pool;
};
ResnetLayout layout_of(const ModelSpec& spec, ModelFamily family) {
  static const std::vector<CnnStage> resnet50 = resnet50_stages();
  if (family == ModelFamily::kResnet50) return {resnet50, CnnStem{}, FeaturePool::kAverage};
  return {spec.stages, spec.stem, spec.feature_pool};
}

// The map the stem and the stages leave: every block strides its 3x3 convolution (padded
// by 1), so only the stem's stride and pool and the stages' strides shrink it.
FeatureMap resnet_output(const ModelSpec& spec, ModelFamily family) {
  const ResnetLayout layout = layout_of(spec, family);
  const CnnStem& stem = layout.stem;
  int64_t side = conv_output_size(spec.image_size, stem.kernel, stem.stride, stem.kernel / 2);
  if (stem.max_pool) side = conv_output_size(side, 3, 2, 1);
  int64_t channels = stem.width;
  for (const CnnStage& stage : layout.stages) {
    side = conv_output_size(side, 3, stage.stride, 1);
    channels = stage.output_channels();
  }
  return FeatureMap{channels, side, side};
}

// Stages are named as He et al. name ResNet-50's: conv2_x for the first.
std::vector<Layer> resnet(const ModelSpec& spec, ModelFamily family, const BuildShape& shape,
                          bool head) {
  const ResnetLayout layout = layout_of(spec, family);
  const CnnStem& stem = layout.stem;
  std::vector<Layer> layers;
  NetBuilder net = input_builder(spec, shape);
  net.conv("conv1", stem.width, stem.kernel, stem.stride, stem.kernel / 2, false);
  net.batch_norm("bn1");
  net.relu("relu");
  if (stem.max_pool) net.max_pool("maxpool", 3, 2, 1);
  layers.push_back(net.take_layer("stem"));
  const std::vector<CnnStage>& stages = layout.stages;
  for (size_t s = 0; s < stages.size(); ++s) {
    const CnnStage& stage = stages[s];
    for (int i = 0; i < stage.blocks; ++i) {
      const int stride = i == 0 ? stage.stride : 1;
      if (stage.block == ResnetBlock::kBottleneck) {
        bottleneck(net, stage.width, stride);
      } else {
        basic_block(net, stage.width, stride);
      }
      layers.push_back(net.take_layer("conv" + std::to_string(s + 2) + "_x." + std::to_string(i)));
    }
  }
  if (layout.pool == FeaturePool::kAverage) {
    // The global pool keeps its input: the last block's ReLU output, which that ReLU needs.
    net.avg_pool("avgpool", 1, true);
    if (!head) {
      layers.push_back(net.take_layer("pool"));
      return layers;
    }
  } else if (!head) {
    return layers;  // the last block's map, flattened, is the features
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

int64_t vision_feature_count(const ModelSpec& spec, ModelFamily family) {
  if (family != ModelFamily::kResnet50 && family != ModelFamily::kResnet) return kFcFeatures;
  const FeatureMap out = resnet_output(spec, family);
  return layout_of(spec, family).pool == FeaturePool::kAverage ? out.channels : out.per_sample();
}

int min_image_size(ModelFamily family) {
  switch (family) {
    case ModelFamily::kAlexnet:
      return 63;
    case ModelFamily::kResnet:
      return 1;  // a padded stem and 3x3 convolutions padded by 1 leave a map of any image
    default:
      return 32;
  }
}

std::vector<Layer> vision_layers(const ModelSpec& spec, ModelFamily family, const BuildShape& shape,
                                 bool classification_head) {
  switch (family) {
    case ModelFamily::kResnet50:
    case ModelFamily::kResnet:
      return resnet(spec, family, shape, classification_head);
    case ModelFamily::kAlexnet:
      return alexnet(spec, shape, classification_head);
    case ModelFamily::kVgg16:
      return vgg16(spec, shape, classification_head);
    default:
      return {};
  }
}

}  // namespace dtsim::models::zoo
