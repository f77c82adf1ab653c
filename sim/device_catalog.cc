// Device catalog data. Figures are vendor datasheet peaks (dense, no sparsity) for the
// SXM variants unless the name says otherwise; NVLink and PCIe are per direction. Efficiency
// figures come from the public measurements cited below, or are estimates that say so.
#include "sim/device_catalog.h"

#include <vector>

#include "sim/collectives/nccl_tuning.h"
#include "sim/nccl_figures.h"

namespace dtsim {
namespace {

struct Peaks {
  double fp64, fp32, tf32, fp16, bf16, fp8, int8;  // TFLOPS (TOPS for int8)
};

// How close each generation's kernels come to the peaks (see DeviceEfficiency). Sources:
//  [MAMF]  S. Bekman, "Machine Learning Engineering", Maximum Achievable Matmul FLOPS table
//          (github.com/stas00/ml-engineering, compute/accelerator): best-shape bf16 torch.matmul
//          (cuBLAS), mean of 100 runs. A100 SXM 271.2 of 312 TFLOPS (86.9%), H100 SXM 794.5 of
//          989 (80.3%), "H200 is the same".
//  [DB]    Baidu DeepBench README, training GEMM and convolution results (cuBLAS, cuDNN):
//          Tesla P100 SGEMM 5124x9124x2560 at 8.21 TFLOPS, 2560x64x2560 at 5.31 TFLOPS.
//  [MK18]  Markidis et al., "NVIDIA Tensor Core Programmability, Performance & Precision",
//          IPDPSW 2018: cuBLAS mixed-precision GEMM up to 83 TFLOPS on V100 (CUDA 9).
//  [GI]    GPUInspector.jl device pages (github.com/pc2/GPUInspector.jl, docs/src/devices):
//          measured copy bandwidth V100-SXM2-32GB 775.6 GB/s of 900 (saxpy 810 GB/s),
//          A100-SXM4-40GB 1310.7 GB/s of 1555; tensor-core MMA loop 116.4 of 125.3 TFLOPS on
//          V100 (an upper bound for GEMMs).
//  [FA2]   Dao, "FlashAttention-2", 2023: 50-73% of the A100's peak, forward and backward.
//  [FA3]   Shah et al., "FlashAttention-3", 2024: up to 740 TFLOPS bf16 forward on H100 (75%).
//  [OV25]  Lee et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
//          Distributed Deep Learning", arXiv 2507.03114: overlapped compute takes 18.9% longer
//          on average (40% at most) on A100, H100, MI250 and MI210, that is it runs at
//          1 / 1.189 = 0.84 of its speed: comm_compute_slowdown 0.16.
//  [LAUNCH] CUDA kernel launches cost a few microseconds through the driver (NVIDIA,
//          "Getting Started with CUDA Graphs", 2019, measures it on V100); with the tail of
//          the kernel and the framework's dispatch we take 5 us on every GPU: it is a host and
//          driver cost more than a property of the chip.
//  [DG]    deepseek-ai/DeepGEMM pull request #73, 2025: FP8 GEMMs on an H800 SXM (the H100's
//          SMs and tensor cores) at 999-1404 TFLOPS with 128x128 tiles and up to 1470 with
//          larger ones, of 1979: gemm_max_fp8 0.71 for Hopper.
//  [NVL]   S. Jeaugey (NCCL), NVIDIA/nccl-tests issue #212, 2024: "450GB/s is the line rate.
//          With the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of
//          370GB/s"; NVIDIA/nccl issue #1455 measures ring busbw 365-370 GB/s on 8 H100, and
//          nccl-tests issues #149 and #178 ~200-210 GB/s on 8 A100 (300 GB/s line rate).
//          nvlink_efficiency 0.8 on every NVLink generation.
//  [PCIE]  PCIe moves data in TLPs whose headers, and the link's flow-control packets, cost
//          15-20% of the line rate: GPU copies over Gen3/Gen4 x16 reach ~12-13 of 15.75 GB/s
//          and ~25 of 31.5 GB/s. pcie_efficiency 0.8 (estimate). Both apply to every GPU below.
//  [SINHA] Sinha et al., "Not All GPUs Are Created Equal: Characterizing Variability in
//          Large-Scale, Accelerator-Rich Systems", SC'22: GPUs of one SKU in five clusters
//          (V100, RTX 5000, MI60) differ by 8% on average (22% at most) in performance,
//          from manufacturing and power management. speed_variation 0.08 on every GPU.
//  [CUBLASWS] NVIDIA cuBLAS API reference, cublasSetWorkspace(): the recommended workspace
//          is 32 MiB on Hopper and 4 MiB on earlier architectures (what PyTorch allocates
//          since pull request #120925). gemm_workspace; 0 on the CPU, whose BLAS packs in
//          per-thread buffers of a few MB that we leave out.
//  [NCCLT] NVIDIA/nccl, src/graph/tuning.cc (2.30.7), NCCL's own cost model of its ring:
//          per protocol a latency per call (baseLat), one per step by kind of hop (hwLat)
//          and a factor on the bus bandwidth. LL: 6.6 us, 0.6 us per NVLink step, 1.0 per
//          PCIe step, 2.7 per network step, half the bandwidth (its 16-byte lines carry 8
//          bytes of data and 8 of flag). LL128: 14.0, 1.9, 2.5, 4.0 us, 0.92 (120 of 128
//          bytes), enabled only on NVLink GPUs from Volta on. Simple: 8.4, 3.4, 5.7, 14.0
//          us, the full bandwidth. collective_protocols on every GPU
//          (sim/collectives/nccl_tuning.h, nccl_ring_protocols); the intra-node step is
//          NVLink's or PCIe's, as the device has.
//  [DGXC]  NVIDIA DGX Cloud Benchmarking recipes (github.com/NVIDIA/dgxc-benchmarking),
//          llama3.1/README_8b.md at release v25.01 (commit 143b90d): Llama 3.1 8B, BF16, on one
//          DGX H100 (8 H100 SXM, 700 W), TP 1, CP 2, sequence 8192, global batch 128: 12.91 s
//          per step. The H100's rates above are single-GPU benchmarks; with them dtsim prices
//          that step at 11.16 s, 13.6% too fast, with no pipeline, no tensor parallelism and
//          no network involved. sustained_compute_fraction 0.85 reproduces it (12.91 s);
//          scenarios/calibration/ holds the run, and tests/reports/calibration_test.cc keeps
//          the figure in step with the model. It is an empirical correction of the figures
//          above on Hopper whose causes are not separated (docs/training.md, "Calibrated
//          figures"), until CUPTI timings of the kernels replace it. The H200, the same GH100
//          die at the same 700 W, takes it as an assumption. The run is not a validation
//          case.

// [NCCLT]'s figures: LL, LL128, Simple; Pascal has no LL128.
constexpr ProtocolTable kNcclNvlink = nccl_ring_protocols(true, true);
constexpr ProtocolTable kNcclNvlinkNoLl128 = nccl_ring_protocols(true, false);
constexpr ProtocolTable kNcclPcie = nccl_ring_protocols(false, false);

// GEMM size dependence (tile and wave quantization, NVIDIA "Matrix Multiplication Background
// User's Guide"): a GEMM pays a roughly fixed pipeline fill and last-wave tail of a few
// microseconds beyond its launch. We estimate it at 3 us, so gemm_half_flops ~= gemm_max x
// peak x 3 us: the FLOPs the device does in that time. gemm_half_dim = 32 fits [DB]'s thin
// P100 SGEMM (k = 64 runs at 65% of the large-GEMM rate) and is our estimate for the
// tensor-core GPUs too. gemm_max is for the device's training dtype (fp32 on Pascal, fp16 on
// Volta, bf16 after).

// Tesla P40 (GP102, GDDR5). Estimates: GP102 SGEMM (DeepBench's GTX 1080 Ti, the same die,
// reaches ~70% of peak already on a 1760x128x1760 GEMM) minus the passively cooled card's
// lower clocks; GDDR5 streams at a lower fraction of its peak than HBM; PCIe-only
// collectives take few SMs and little memory bandwidth. Attention and convolutions as on the
// P100 below.
constexpr DeviceEfficiency kPascalGddr5{.gemm_max = 0.8,
                                        .gemm_half_flops = 3e7,
                                        .gemm_half_dim = 32,
                                        .attention_factor = 0.8,
                                        .conv_factor = 1.0,
                                        .memory_bandwidth_fraction = 0.75,
                                        .kernel_launch = Duration::us(5),
                                        .comm_compute_slowdown = 0.1,
                                        .nvlink_efficiency = 0.8,
                                        .pcie_efficiency = 0.8,
                                        .speed_variation = 0.08,
                                        .collective_protocols = kNcclPcie};

// Tesla P100 (GP100, HBM2). gemm_max: [DB]'s 8.21 TFLOPS SGEMM is 77% of the SXM2 peak or 88%
// of the PCIe peak (DeepBench does not say which card): 0.8 for both. conv_factor: [DB]'s
// first ResNet layer (k = 27) at 4.26 TFLOPS is above what the GEMM formula gives (cuDNN's
// Winograd and FFT algorithms), so convolutions are no slower than GEMMs. Estimates:
// attention (no FlashAttention before Ampere: batched GEMMs), HBM2 fraction (below the
// V100's [GI]), launch [LAUNCH], slowdown as [OV25] for NVLink, less over PCIe.
constexpr DeviceEfficiency kPascalHbm2{.gemm_max = 0.8,
                                       .gemm_half_flops = 2.5e7,
                                       .gemm_half_dim = 32,
                                       .attention_factor = 0.8,
                                       .conv_factor = 1.0,
                                       .memory_bandwidth_fraction = 0.8,
                                       .kernel_launch = Duration::us(5),
                                       .comm_compute_slowdown = 0.16,
                                       .nvlink_efficiency = 0.8,
                                       .pcie_efficiency = 0.8,
                                       .speed_variation = 0.08,
                                       .collective_protocols = kNcclNvlinkNoLl128};
constexpr DeviceEfficiency kPascalHbm2Pcie = [] {
  DeviceEfficiency e = kPascalHbm2;
  e.comm_compute_slowdown = 0.1;
  e.collective_protocols = kNcclPcie;
  return e;
}();

// Tesla V100 (HBM2). gemm_max: [MK18]'s 83 TFLOPS is 66% of 125 with CUDA 9; later cuBLAS
// releases do somewhat better and [GI]'s 116 TFLOPS MMA loop bounds it: 0.7 (estimate).
// HBM: [GI] 775.6 / 900 = 0.86. Attention: no FlashAttention-2 on Volta, batched GEMMs
// (estimate). conv_factor: cuDNN implicit GEMM (estimate).
constexpr DeviceEfficiency kVolta{.gemm_max = 0.7,
                                  .gemm_half_flops = 2.6e8,
                                  .gemm_half_dim = 32,
                                  .attention_factor = 0.8,
                                  .conv_factor = 0.9,
                                  .memory_bandwidth_fraction = 0.86,
                                  .kernel_launch = Duration::us(5),
                                  .comm_compute_slowdown = 0.16,
                                  .nvlink_efficiency = 0.8,
                                  .pcie_efficiency = 0.8,
                                  .speed_variation = 0.08,
                                  .collective_protocols = kNcclNvlink};

// A100 SXM4. gemm_max: [MAMF] 0.87. HBM: [GI] 1310.7 / 1555 = 0.84 on the 40 GB card, taken
// for the 80 GB card too. attention_factor: [FA2] forward and backward average ~60% of peak,
// against 0.87 x 0.8 (head dim 128) = 70% for a GEMM of that shape here. conv_factor:
// estimate. Slowdown: [OV25]. sustained_compute_fraction: 1, no published A100 run chosen
// to calibrate it on yet (see [DGXC]).
constexpr DeviceEfficiency kAmpere{.gemm_max = 0.87,
                                   .gemm_half_flops = 8.1e8,
                                   .gemm_half_dim = 32,
                                   .attention_factor = 0.85,
                                   .conv_factor = 0.9,
                                   .memory_bandwidth_fraction = 0.84,
                                   .kernel_launch = Duration::us(5),
                                   .comm_compute_slowdown = 0.16,
                                   .nvlink_efficiency = 0.8,
                                   .pcie_efficiency = 0.8,
                                   .speed_variation = 0.08,
                                   .collective_protocols = kNcclNvlink};

// H100 and H200 SXM. gemm_max: [MAMF] 0.80 for both; gemm_max_fp8: [DG] 0.71;
// sustained_compute_fraction: [DGXC] 0.85. attention_factor: [FA3] forward runs
// above the GEMM formula's 0.8 x 0.8 = 64% at head dim 128, its backward below; 0.85 as on
// A100 (estimate). HBM3 and HBM3e fraction: estimate, by analogy with [GI]'s V100 and A100
// figures. Slowdown: [OV25].
constexpr DeviceEfficiency kHopper{.gemm_max = 0.8,
                                   .gemm_max_fp8 = 0.71,
                                   .gemm_half_flops = 2.4e9,
                                   .gemm_half_dim = 32,
                                   .attention_factor = 0.85,
                                   .conv_factor = 0.9,
                                   .memory_bandwidth_fraction = 0.85,
                                   .kernel_launch = Duration::us(5),
                                   .comm_compute_slowdown = 0.16,
                                   .nvlink_efficiency = 0.8,
                                   .pcie_efficiency = 0.8,
                                   .speed_variation = 0.08,
                                   .sustained_compute_fraction = 0.85,
                                   .collective_protocols = kNcclNvlink,
                                   .gemm_workspace = MiB(32)};

// Generic AVX-512 server CPU; all estimates: MKL/oneDNN SGEMM reaches ~85% of the AVX-512
// peak on large GEMMs, after ~10 us of threading and packing (half_flops = 0.85 x 4 TFLOPS
// x 10 us); its micro-kernels are 16 wide; STREAM triad reaches ~75% of DDR4's nominal
// bandwidth; an op costs ~2 us of framework dispatch and OpenMP fork/join; communication
// threads take cores from compute. Ranks on one CPU node exchange data through shared
// memory, which the node's PCIe tree stands for: no link protocol overhead. MPI costs
// ~1 us per call, ~0.5 us per shared-memory hop and ~5 us per hop through the NIC's
// software stack: one protocol (MPI's), at the full bandwidth.
constexpr ProtocolTable kMpi{ProtocolCosts{}, ProtocolCosts{},
                             ProtocolCosts{Duration::us(1), Duration::ns(500), Duration::us(5),
                                           1.0}};
constexpr DeviceEfficiency kCpu{.gemm_max = 0.85,
                                .gemm_half_flops = 3.4e7,
                                .gemm_half_dim = 16,
                                .attention_factor = 0.8,
                                .conv_factor = 0.9,
                                .memory_bandwidth_fraction = 0.75,
                                .kernel_launch = Duration::us(2),
                                .comm_compute_slowdown = 0.1,
                                .nvlink_efficiency = 1.0,
                                .pcie_efficiency = 1.0,
                                .collective_protocols = kMpi,
                                .gemm_workspace = Bytes(0),
                                .nccl_channels = 0};

// `units` SMs (datasheets: GP102 P40 30, GP100 56, GV100 80, GA100 in A100 108, GH100 in
// H100/H200 SXM 132) run GEMM tiles of 256 x 128, cuBLAS's largest tensor-core tile, the
// one large GEMMs use.
DeviceEfficiency with_units(DeviceEfficiency e, int units) {
  e.compute_units = units;
  return e;
}

// NCCL's channels on a node of these GPUs, from their NVLinks (0: PCIe only; the datasheet
// counts in each description) and compute capability. An NVSwitch node (A100, H100, H200)
// gives a GPU one path of all its links, as nccl_collective_channels assumes; a DGX-1's
// hybrid cube-mesh (P100, V100) gives direct links of one or two, which bound the search's
// first speed per link instead: taking all links as one path there is an approximation.
DeviceEfficiency with_nccl(DeviceEfficiency e, int nvlink_links, int sm) {
  e.nccl_channels = nccl_collective_channels(nvlink_links, sm);
  e.nccl_p2p_channels =
      nccl_p2p_channels_per_local_peer(nvlink_links, nccl_p2p_channels(e.nccl_channels));
  e.compute_capability = sm;
  return e;
}

DeviceSpec make(std::string name, std::string description, DeviceKind kind, Peaks p,
                double memory_gib, double memory_gbps, double nvlink_gbps, double pcie_gbps,
                const DeviceEfficiency& efficiency) {
  DeviceSpec d;
  d.name = std::move(name);
  d.description = std::move(description);
  d.kind = kind;
  const double values[] = {p.fp64, p.fp32, p.tf32, p.fp16, p.bf16, p.fp8, p.int8};
  for (size_t i = 0; i < kAllDTypes.size(); ++i) d.peak[i] = FlopRate::tflops(values[i]);
  d.memory_capacity = Bytes(static_cast<int64_t>(memory_gib * 1073741824.0));
  d.memory_bandwidth = Bandwidth::gb_per_s(memory_gbps);
  d.intra_node_bandwidth = Bandwidth::gb_per_s(nvlink_gbps);
  d.pcie_bandwidth = Bandwidth::gb_per_s(pcie_gbps);
  d.efficiency = efficiency;
  return d;
}

const std::vector<DeviceSpec>& catalog() {
  // PCIe x16 per direction: Gen3 15.75 GB/s, Gen4 31.5 GB/s, Gen5 63 GB/s.
  static const std::vector<DeviceSpec> devices = {
      make("P40", "NVIDIA Tesla P40 (Pascal, PCIe, 24 GB GDDR5; FP16 math at 1/64 rate)",
           DeviceKind::kGpu, {0.37, 11.76, 0, 0.18, 0, 0, 47.0}, 24, 346, 0, 15.75,
           with_nccl(with_units(kPascalGddr5, 30), 0, 60)),
      make("P100", "NVIDIA Tesla P100 SXM2 16 GB (Pascal, NVLink 1: 4 links x 20 GB/s)",
           DeviceKind::kGpu, {5.3, 10.6, 0, 21.2, 0, 0, 0}, 16, 732, 80, 15.75,
           with_nccl(with_units(kPascalHbm2, 56), 4, 60)),
      make("P100-PCIe", "NVIDIA Tesla P100 PCIe 16 GB (Pascal, no NVLink)", DeviceKind::kGpu,
           {4.7, 9.3, 0, 18.7, 0, 0, 0}, 16, 732, 0, 15.75,
           with_nccl(with_units(kPascalHbm2Pcie, 56), 0, 60)),
      make("V100", "NVIDIA Tesla V100 SXM2 16 GB (Volta, NVLink 2: 6 links x 25 GB/s)",
           DeviceKind::kGpu, {7.8, 15.7, 0, 125, 0, 0, 62}, 16, 900, 150, 15.75,
           with_nccl(with_units(kVolta, 80), 6, 70)),
      make("V100-32GB", "NVIDIA Tesla V100 SXM2 32 GB (Volta, NVLink 2: 6 links x 25 GB/s)",
           DeviceKind::kGpu, {7.8, 15.7, 0, 125, 0, 0, 62}, 32, 900, 150, 15.75,
           with_nccl(with_units(kVolta, 80), 6, 70)),
      make("A100-40GB", "NVIDIA A100 SXM4 40 GB (Ampere, NVLink 3: 12 links x 25 GB/s)",
           DeviceKind::kGpu, {19.5, 19.5, 156, 312, 312, 0, 624}, 40, 1555, 300, 31.5,
           with_nccl(with_units(kAmpere, 108), 12, 80)),
      make("A100-80GB", "NVIDIA A100 SXM4 80 GB (Ampere, NVLink 3: 12 links x 25 GB/s)",
           DeviceKind::kGpu, {19.5, 19.5, 156, 312, 312, 0, 624}, 80, 2039, 300, 31.5,
           with_nccl(with_units(kAmpere, 108), 12, 80)),
      make("H100", "NVIDIA H100 SXM5 80 GB (Hopper, NVLink 4: 18 links x 25 GB/s)",
           DeviceKind::kGpu, {67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9}, 80, 3350, 450, 63,
           with_nccl(with_units(kHopper, 132), 18, 90)),
      make("H200", "NVIDIA H200 SXM 141 GB (Hopper, HBM3e, NVLink 4: 18 links x 25 GB/s)",
           DeviceKind::kGpu, {67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9}, 141, 4800, 450, 63,
           with_nccl(with_units(kHopper, 132), 18, 90)),
      make("CPU", "Generic 2-socket x86 server CPU (2 x 32 cores AVX-512, 8-channel DDR4)",
           DeviceKind::kCpu, {2.0, 4.0, 0, 0, 0, 0, 0}, 256, 200, 0, 15.75, kCpu),
  };
  return devices;
}

}  // namespace

std::span<const DeviceSpec> builtin_devices() { return catalog(); }

const DeviceSpec* find_builtin_device(std::string_view name) {
  for (const DeviceSpec& d : catalog()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

}  // namespace dtsim
