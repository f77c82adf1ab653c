// Tests of the roofline cost model: worked examples on a test device with round figures,
// the size dependence of GEMM efficiency, dtype fallbacks, and the catalog devices.
#include "models/cost_model.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "models/chunk_cost.h"
#include "models/model_spec.h"
#include "models/workload.h"
#include "sim/device_catalog.h"

namespace dtsim::models {
namespace {

void set_peak(DeviceSpec& d, DType t, double tflops) {
  d.peak[static_cast<size_t>(t)] = FlopRate::tflops(tflops);
}

// fp32 20 TFLOPS, fp16 and bf16 200 TFLOPS, no tf32 or fp8; 1000 GB/s of which 80% is
// reachable; GEMMs reach 0.8 of peak, half of that at 1e8 FLOPs or a smallest dimension of
// 32; attention runs at half a GEMM's rate, convolutions at three quarters; 5 us a kernel.
DeviceSpec test_gpu() {
  DeviceSpec d;
  d.name = "TestGpu";
  set_peak(d, DType::kFp32, 20);
  set_peak(d, DType::kFp16, 200);
  set_peak(d, DType::kBf16, 200);
  d.memory_bandwidth = Bandwidth::gb_per_s(1000);
  d.efficiency = {.gemm_max = 0.8,
                  .gemm_half_flops = 1e8,
                  .gemm_half_dim = 32,
                  .attention_factor = 0.5,
                  .conv_factor = 0.75,
                  .memory_bandwidth_fraction = 0.8,
                  .kernel_launch = Duration::us(5),
                  .comm_compute_slowdown = 0.1};
  return d;
}

OpSignature gemm(int64_t m, int64_t n, int64_t k, DType dtype = DType::kBf16, int64_t batch = 1) {
  OpSignature op;
  op.kind = KernelKind::kGemm;
  op.gemm = {.m = m, .n = n, .k = k, .batch = batch};
  op.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
             static_cast<double>(batch);
  // A, B and C read or written once, 2 bytes an element.
  op.bytes = 2.0 * static_cast<double>(m * k + k * n + m * n) * static_cast<double>(batch);
  op.storage = dtype;
  op.math = dtype;
  return op;
}

double ns(Duration d) { return static_cast<double>(d.count_ns()); }

const DeviceSpec& catalog(const char* name) {
  const DeviceSpec* d = find_builtin_device(name);
  if (d == nullptr) throw std::logic_error(name);
  return *d;
}

TEST(RooflineCostModel, BigGemmRunsNearGemmMaxTimesPeak) {
  // 8192^3: f = 2 * 8192^3 = 2^40 = 1.0995e12 FLOPs, d = 8192.
  // efficiency = 0.8 * 2^40 / (2^40 + 1e8) * 8192 / (8192 + 32)
  //            = 0.8 * 0.999909 * 0.996109 = 0.796815
  // compute = 2^40 / (200e12 * 0.796815) = 6'899'418.7 ns -> 6'899'419 ns
  // memory  = 3 * 8192^2 * 2 B = 402.7 MB / 800 GB/s = 503'316.5 ns (well below compute)
  // time    = 5'000 + 6'899'419 = 6'904'419 ns
  const RooflineCostModel model;
  const OpSignature op = gemm(8192, 8192, 8192);
  EXPECT_NEAR(RooflineCostModel::gemm_efficiency(op.gemm, test_gpu(), op.kind), 0.796815, 1e-6);
  EXPECT_NEAR(ns(launched_time(model, op, test_gpu())), 6'904'419, 1);
}

TEST(RooflineCostModel, BigBf16GemmOnA100NearGemmMaxTimesPeak) {
  // Within 1% of FLOPs / (gemm_max * 312 TFLOPS): the size factors are both above 0.99.
  const DeviceSpec& a100 = catalog("A100-80GB");
  const OpSignature op = gemm(8192, 8192, 8192);
  const double ideal_s =
      op.flops / (a100.efficiency.gemm_max * a100.peak_for(DType::kBf16).flops_per_second());
  const double seconds = launched_time(RooflineCostModel(), op, a100).seconds();
  EXPECT_GT(seconds, ideal_s);
  EXPECT_LT(seconds, ideal_s * 1.01);
}

TEST(RooflineCostModel, TinyGemmIsDominatedByLaunch) {
  // 64^3: f = 524'288, d = 64.
  // efficiency = 0.8 * 524'288 / 100'524'288 * 64 / 96 = 0.0027816
  // compute = 524'288 / (200e12 * 0.0027816) = 942.4 ns -> 943 ns
  // memory  = 3 * 64^2 * 2 B / 800 GB/s = 30.7 ns
  // time    = 5'000 + 943 = 5'943 ns, 84% of it launch
  const OpSignature op = gemm(64, 64, 64);
  const Duration t = launched_time(RooflineCostModel(), op, test_gpu());
  EXPECT_NEAR(ns(t), 5'943, 1);
  EXPECT_GT(ns(test_gpu().efficiency.kernel_launch), 0.8 * ns(t));
}

TEST(RooflineCostModel, MemoryBoundElementwiseStreamsAtTheReachableBandwidth) {
  // 400 MB moved, 1e8 FLOPs: compute = 1e8 / 20e12 (fp32 vector rate) = 5 us;
  // memory = 4e8 B / (1000 GB/s * 0.8) = 500 us; time = 5 us + 500 us = 505 us.
  OpSignature op;
  op.kind = KernelKind::kElementwise;
  op.flops = 1e8;
  op.bytes = 4e8;
  EXPECT_NEAR(ns(launched_time(RooflineCostModel(), op, test_gpu())), 505'000, 1);
}

TEST(RooflineCostModel, NonGemmComputeRunsAtTheFp32PeakWhateverTheDtype) {
  // 1e12 FLOPs at 20 TFLOPS = 50 ms, efficiency 1, for bf16 as for fp32.
  OpSignature op;
  op.kind = KernelKind::kSoftmax;
  op.flops = 1e12;
  op.bytes = 1e3;
  op.storage = DType::kBf16;
  EXPECT_NEAR(ns(launched_time(RooflineCostModel(), op, test_gpu())), 50'005'000, 1);
}

TEST(RooflineCostModel, SustainedComputeFractionSlowsFlopBoundTimeOnly) {
  // At half the sustained rate: the 8192^3 GEMM's compute doubles, 2 x 6'899'418.7 ns ->
  // 13'798'838 ns, + 5 us launch; the softmax's 50 ms at the fp32 peak doubles to 100 ms;
  // the memory-bound elementwise op stays at its 500 us of HBM traffic (its compute, 5 ->
  // 10 us, stays below it), + 5 us.
  DeviceSpec d = test_gpu();
  d.efficiency.sustained_compute_fraction = 0.5;
  const RooflineCostModel model;
  EXPECT_NEAR(ns(launched_time(model, gemm(8192, 8192, 8192), d)), 13'803'838, 1);
  OpSignature softmax;
  softmax.kind = KernelKind::kSoftmax;
  softmax.flops = 1e12;
  softmax.bytes = 1e3;
  EXPECT_NEAR(ns(launched_time(model, softmax, d)), 100'005'000, 1);
  OpSignature elementwise;
  elementwise.kind = KernelKind::kElementwise;
  elementwise.flops = 1e8;
  elementwise.bytes = 4e8;
  EXPECT_NEAR(ns(launched_time(model, elementwise, d)), 505'000, 1);
  // The efficiency a GEMM's shape reaches is the kernel's, unchanged.
  EXPECT_NEAR(RooflineCostModel::gemm_efficiency(gemm(8192, 8192, 8192).gemm, d, KernelKind::kGemm),
              0.796815, 1e-6);
}

TEST(RooflineCostModel, EfficiencyGrowsMonotonicallyWithSize) {
  // Apart from wave quantization (switched off here, tested below), a bigger GEMM never
  // reaches less of the peak.
  std::vector<int64_t> sizes;
  for (int64_t s = 1; s <= 65536; s = s * 3 / 2 + 1) sizes.push_back(s);
  std::vector<DeviceSpec> devices = {test_gpu()};
  for (const DeviceSpec& d : builtin_devices()) devices.push_back(d);
  for (DeviceSpec& d : devices) d.efficiency.compute_units = 0;
  for (const DeviceSpec& device : devices) {
    const DeviceSpec* d = &device;
    double cube = 0;
    double wide = 0;
    for (int64_t s : sizes) {
      // Cubes, and a growing n with m and k fixed at 1024: both never lose efficiency.
      const double e_cube = RooflineCostModel::gemm_efficiency({s, s, s, 1}, *d, KernelKind::kGemm);
      const double e_wide =
          RooflineCostModel::gemm_efficiency({1024, s, 1024, 1}, *d, KernelKind::kGemm);
      EXPECT_GT(e_cube, cube) << d->name << " " << s;
      EXPECT_GE(e_wide, wide) << d->name << " " << s;
      EXPECT_LT(e_cube, d->efficiency.gemm_max) << d->name << " " << s;
      cube = e_cube;
      wide = e_wide;
    }
    EXPECT_GT(cube, 0.99 * d->efficiency.gemm_max) << d->name;
  }
}

TEST(RooflineCostModel, WaveQuantizationWastesThePartlyFilledLastWave) {
  // A100: 108 SMs, 256 x 128 tiles. m 2048, n 4608 (GPT-3's QKV at tp 8): 8 x 36 = 288
  // tiles = 2.67 waves of 108, run as 3: 288 / 324 = 0.889 of the efficiency without.
  DeviceSpec a100 = catalog("A100-80GB");
  ASSERT_EQ(a100.efficiency.compute_units, 108);
  const GemmDims qkv{2048, 4608, 12288, 1};
  const double with = RooflineCostModel::gemm_efficiency(qkv, a100, KernelKind::kGemm);
  DeviceSpec unquantized = a100;
  unquantized.efficiency.compute_units = 0;
  const double without = RooflineCostModel::gemm_efficiency(qkv, unquantized, KernelKind::kGemm);
  EXPECT_NEAR(with / without, 288.0 / 324.0, 1e-12);
  // Exactly two full waves (216 tiles: m 3072 -> 12 tile rows, n 2304 -> 18 tile columns)
  // lose nothing, and neither does a GEMM smaller than one wave.
  EXPECT_NEAR(
      RooflineCostModel::gemm_efficiency({3072, 2304, 4096, 1}, a100, KernelKind::kGemm),
      RooflineCostModel::gemm_efficiency({3072, 2304, 4096, 1}, unquantized, KernelKind::kGemm),
      1e-15);
  EXPECT_NEAR(
      RooflineCostModel::gemm_efficiency({512, 512, 4096, 1}, a100, KernelKind::kGemm),
      RooflineCostModel::gemm_efficiency({512, 512, 4096, 1}, unquantized, KernelKind::kGemm),
      1e-15);
  // Batched GEMMs count every batch's tiles: attention with b x heads = 12 batches of
  // 2048 x 2048 -> 12 x 8 x 16 = 1536 tiles = 14.2 waves, run as 15.
  const GemmDims scores{2048, 2048, 128, 12};
  EXPECT_NEAR(
      RooflineCostModel::gemm_efficiency(scores, a100, KernelKind::kBatchedGemm, true) /
          RooflineCostModel::gemm_efficiency(scores, unquantized, KernelKind::kBatchedGemm, true),
      1536.0 / (15 * 108), 1e-12);
}

TEST(RooflineCostModel, ThinGemmHasLowEfficiency) {
  // m = 1 (one token through an 8192 x 8192 layer): f = 2 * 8192^2 = 134'217'728, d = 1.
  // efficiency = 0.8 * 134'217'728 / 234'217'728 * 1 / 33 = 0.013892
  // compute = 134'217'728 / (200e12 * 0.013892) = 48'307.4 ns
  // memory  = (8192 + 8192^2 + 8192) * 2 B / 800 GB/s = 167'813.1 ns -> 167'814 ns (the bound)
  // time    = 5'000 + 167'814 = 172'814 ns
  const OpSignature op = gemm(1, 8192, 8192);
  EXPECT_NEAR(RooflineCostModel::gemm_efficiency(op.gemm, test_gpu(), op.kind), 0.013892, 1e-6);
  EXPECT_NEAR(ns(launched_time(RooflineCostModel(), op, test_gpu())), 172'814, 1);
  // On the catalog GPUs too, a single-row GEMM reaches under 5% of the peak.
  for (const DeviceSpec& d : builtin_devices()) {
    EXPECT_LT(RooflineCostModel::gemm_efficiency(op.gemm, d, op.kind), 0.05) << d.name;
  }
}

TEST(RooflineCostModel, DtypeWithoutMathFallsBackToTheFastestThatCarriesIt) {
  const RooflineCostModel model;
  const OpSignature big = gemm(8192, 8192, 8192);
  auto time_at = [&](const DeviceSpec& d, DType t) {
    OpSignature op = big;
    op.math = t;
    return launched_time(model, op, d);
  };
  // The test GPU has no bf16 math once it is removed: bf16 runs at the fp32 rate, 10x slower
  // in compute (bf16 never borrows fp16 math: their ranges differ).
  DeviceSpec no_bf16 = test_gpu();
  set_peak(no_bf16, DType::kBf16, 0);
  const Duration launch = no_bf16.efficiency.kernel_launch;
  EXPECT_NEAR(ns(time_at(no_bf16, DType::kBf16) - launch),
              10 * ns(time_at(test_gpu(), DType::kBf16) - launch), 10);
  // tf32 without tf32 math is fp32; fp8 without fp8 math runs in 16-bit.
  EXPECT_EQ(time_at(test_gpu(), DType::kTf32), time_at(test_gpu(), DType::kFp32));
  EXPECT_EQ(time_at(test_gpu(), DType::kFp8), time_at(test_gpu(), DType::kBf16));
  // Catalog: V100 and P100 price bf16 at their fp32 rate, A100 prices fp8 as bf16, and the
  // P40's fp16 runs at its fp32 rate, not its 1/64-rate fp16 math.
  for (const char* name : {"V100", "P100"}) {
    EXPECT_EQ(time_at(catalog(name), DType::kBf16), time_at(catalog(name), DType::kFp32)) << name;
  }
  EXPECT_EQ(time_at(catalog("A100-80GB"), DType::kFp8),
            time_at(catalog("A100-80GB"), DType::kBf16));
  EXPECT_EQ(time_at(catalog("P40"), DType::kFp16), time_at(catalog("P40"), DType::kFp32));
  EXPECT_LT(time_at(catalog("V100"), DType::kFp16), time_at(catalog("V100"), DType::kBf16));
  // FP8 tensor cores: twice the peak, but a lower ceiling (gemm_max_fp8), so a large GEMM
  // gains (FP8 peak / bf16 peak) x gemm_max_fp8 / gemm_max, about 1.78, not 2.
  const DeviceSpec& h100 = catalog("H100");
  const Duration launch_h = h100.efficiency.kernel_launch;
  const double peaks = h100.peak_for(DType::kFp8).flops_per_second() /
                       h100.peak_for(DType::kBf16).flops_per_second();
  EXPECT_NEAR(ns(time_at(h100, DType::kBf16) - launch_h) / ns(time_at(h100, DType::kFp8) - launch_h),
              peaks * h100.efficiency.gemm_max_fp8 / h100.efficiency.gemm_max, 1e-6);
}

TEST(RooflineCostModel, DtypeWithNoUsableMathIsAnError) {
  DeviceSpec fp16_only;
  fp16_only.name = "Fp16Only";
  set_peak(fp16_only, DType::kFp16, 100);
  fp16_only.memory_bandwidth = Bandwidth::gb_per_s(100);
  const RooflineCostModel model;
  EXPECT_THROW(launched_time(model, gemm(64, 64, 64, DType::kBf16), fp16_only),
               std::invalid_argument);
  EXPECT_NO_THROW(launched_time(model, gemm(64, 64, 64, DType::kFp16), fp16_only));
  OpSignature norm;
  norm.kind = KernelKind::kLayerNorm;
  norm.flops = 1e6;
  EXPECT_THROW(launched_time(model, norm, fp16_only), std::invalid_argument);
}

TEST(RooflineCostModel, AttentionAndConvFactorsScaleTheGemmEfficiency) {
  // Attention scores: 32 heads of 4096 x 4096 x 64. f = 2 * 4096^2 * 64 * 32 = 6.87e10,
  // d = 64: GEMM efficiency = 0.8 * 6.87e10 / (6.87e10 + 1e8) * 64 / 96 = 0.532558;
  // attention runs at half of it (0.266279), a convolution at three quarters (0.399419).
  const GemmDims scores{.m = 4096, .n = 4096, .k = 64, .batch = 32};
  const DeviceSpec d = test_gpu();
  const double matmul = RooflineCostModel::gemm_efficiency(scores, d, KernelKind::kGemm);
  EXPECT_NEAR(matmul, 0.532558, 1e-6);
  EXPECT_NEAR(RooflineCostModel::gemm_efficiency(scores, d, KernelKind::kBatchedGemm, true),
              0.266279, 1e-6);
  EXPECT_NEAR(RooflineCostModel::gemm_efficiency(scores, d, KernelKind::kConv), 0.399419, 1e-6);
  // Reading only Q and K (fused attention keeps the scores on chip), 33.5 MB: compute-bound
  // (6.87e10 / (200e12 * 0.532558) = 645'183 ns as a GEMM against 42 us of memory), so the
  // time beyond launch doubles.
  OpSignature op = gemm(4096, 4096, 64, DType::kBf16, 32);
  op.bytes = 2.0 * 2 * 4096 * 64 * 32;
  const RooflineCostModel model;
  const Duration launch = d.efficiency.kernel_launch;
  const double as_matmul = ns(launched_time(model, op, d) - launch);
  EXPECT_NEAR(as_matmul, 645'183, 1);
  op.kind = KernelKind::kBatchedGemm;
  op.attention_core = true;
  EXPECT_NEAR(ns(launched_time(model, op, d) - launch), 2 * as_matmul, 2);
}

TEST(RooflineCostModel, BackwardGemmsArePricedOnTheirOwnShapes) {
  // A linear layer's backward is two GEMMs of the forward's FLOPs: the data gradient
  // [m, k] and the weight gradient [n, k]. Without wave quantization (test GPU) each costs
  // the forward's time; on an A100 the weight gradient of GPT-3's QKV (4608 x 12288 out,
  // 36 x 96 = 3456 tiles = 32 full waves) fills its waves, while the forward
  // (2048 x 4608 out, 288 tiles = 2.67 waves) wastes 1 - 288/324 of its last.
  const RooflineCostModel model;
  const DeviceSpec d = test_gpu();
  OpSignature fwd = gemm(4096, 4096, 4096);
  fwd.gemm.transpose_b = true;
  OpSignature data = fwd;
  data.pass = OpPass::kBackwardData;
  data.gemm = backward_data_gemm(fwd.gemm);
  OpSignature weight = fwd;
  weight.pass = OpPass::kBackwardWeight;
  weight.gemm = backward_weight_gemm(fwd.gemm);
  EXPECT_EQ(model.price(data, d).time, model.price(fwd, d).time);
  EXPECT_EQ(model.price(weight, d).time, model.price(fwd, d).time);
  const DeviceSpec& a100 = catalog("A100-80GB");
  const GemmDims qkv{2048, 4608, 12288, 1, false, true};
  const double forward = RooflineCostModel::gemm_efficiency(qkv, a100, KernelKind::kGemm);
  const double wgrad =
      RooflineCostModel::gemm_efficiency(backward_weight_gemm(qkv), a100, KernelKind::kGemm);
  EXPECT_NEAR(forward / wgrad, 288.0 / 324.0, 1e-9);
}

TEST(RooflineCostModel, PricesTheKernelWithoutItsLaunch) {
  const RooflineCostModel model;
  const OpSignature op = gemm(8192, 8192, 8192);
  const OpCost c = model.price(op, test_gpu());
  EXPECT_EQ(c.source, CostSource::kRoofline);
  EXPECT_EQ(c.time + test_gpu().efficiency.kernel_launch, launched_time(model, op, test_gpu()));
}

TEST(RooflineCostModel, GemmWithoutAShapeUsesItsFlops) {
  // No shape: efficiency = 0.8 * f / (f + 1e8) with no dimension factor. f = 1e8 gives 0.4:
  // compute = 1e8 / (200e12 * 0.4) = 1'250 ns; time = 6'250 ns.
  OpSignature op;
  op.kind = KernelKind::kGemm;
  op.flops = 1e8;
  EXPECT_NEAR(ns(launched_time(RooflineCostModel(), op, test_gpu())), 6'250, 1);
  EXPECT_EQ(RooflineCostModel::gemm_efficiency(op.gemm, test_gpu(), op.kind), 0);
}

TEST(RooflineCostModel, EmptyOpCostsTheLaunch) {
  OpSignature op;
  EXPECT_EQ(launched_time(RooflineCostModel(), op, test_gpu()), Duration::us(5));
  EXPECT_EQ(RooflineCostModel().name(), "roofline");
}

TEST(RooflineCostModel, CatalogEfficienciesAreInRange) {
  for (const DeviceSpec& d : builtin_devices()) {
    const DeviceEfficiency& e = d.efficiency;
    EXPECT_GT(e.gemm_max, 0) << d.name;
    EXPECT_LE(e.gemm_max, 1) << d.name;
    EXPECT_GT(e.gemm_half_flops, 0) << d.name;
    EXPECT_GT(e.gemm_half_dim, 0) << d.name;
    for (double f : {e.gemm_max_fp8, e.attention_factor, e.conv_factor, e.memory_bandwidth_fraction,
                     e.nvlink_efficiency, e.pcie_efficiency, e.sustained_compute_fraction}) {
      EXPECT_GT(f, 0) << d.name;
      EXPECT_LE(f, 1) << d.name;
    }
    EXPECT_GE(e.speed_variation, 0) << d.name;
    EXPECT_LT(e.speed_variation, 1) << d.name;
    EXPECT_GE(e.comm_compute_slowdown, 0) << d.name;
    EXPECT_LT(e.comm_compute_slowdown, 1) << d.name;
    EXPECT_GT(e.kernel_launch, Duration::zero()) << d.name;
  }
}

}  // namespace
// Transformer Engine's FP8: with FP8 math exactly as fast as bf16, an FP8 step differs from
// a bf16 one only by the casts of every Linear's input (forward) and output gradient
// (backward), 4 bytes per element each; the vocabulary logits stay in bf16, uncast.
TEST(ChunkCost, Fp8CastsEveryLinearButTheLogits) {
  DeviceSpec d = catalog("H100");
  set_peak(d, DType::kFp8, d.peak_for(DType::kBf16).flops_per_second() / 1e12);
  d.efficiency.gemm_max_fp8 = d.efficiency.gemm_max;
  const ModelSpec spec = find_model_preset("gpt3-1.3b")->spec;
  const Workload w8 = build_workload(spec, WorkloadShape{1, 1024, Precision::kFp8, true});
  const Workload w16 = build_workload(spec, WorkloadShape{1, 1024, Precision::kBf16, true});
  const RankShard one;
  const RooflineCostModel model;
  const int layers = static_cast<int>(w8.layers.size());
  const ChunkCost c8 = chunk_cost(w8, 0, layers, one, Recompute::kNone, d, model);
  const ChunkCost c16 = chunk_cost(w16, 0, layers, one, Recompute::kNone, d, model);
  const Bandwidth reachable = d.memory_bandwidth * d.efficiency.memory_bandwidth_fraction;
  auto cast = [&](double elements) {
    return d.efficiency.kernel_launch + Bytes(std::llround(4 * elements)) / reachable;
  };
  Duration fwd, bwd;
  int linears = 0;
  for (const Layer& layer : w8.layers) {
    for (const Op& op : layer.ops) {
      if (op.kind != OpKind::kMatmul || op.split == TensorSplit::kVocab) continue;
      ++linears;
      const double rows = static_cast<double>(op.gemm.m) * static_cast<double>(op.gemm.batch);
      fwd += cast(rows * static_cast<double>(op.gemm.k));
      bwd += cast(rows * static_cast<double>(op.gemm.n));
    }
  }
  EXPECT_EQ(linears, 4 * spec.layers);  // qkv, proj, fc1, fc2
  EXPECT_EQ(c8.fwd - c16.fwd, fwd);
  EXPECT_EQ(c8.bwd - c16.bwd, bwd);
}

}  // namespace dtsim::models
