// What a device is: peak FLOP rates per dtype, memory, and its links out of the chip.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/collectives/protocol.h"
#include "sim/dtype.h"
#include "sim/units.h"

namespace dtsim {

enum class DeviceKind { kGpu, kCpu };

// How close real kernels come to the datasheet peaks: the roofline cost model
// (models/cost_model.h) reads every figure it uses from here, so a device's behaviour is
// data in the catalog or the scenario, never a constant in code.
struct DeviceEfficiency {
  // Large GEMMs reach this fraction of the dtype's peak; a GEMM of `gemm_half_flops`
  // FLOPs reaches half of it (efficiency = max * f / (f + half)).
  double gemm_max = 0.8;
  // The same for GEMMs that run on FP8 tensor cores, as a fraction of the FP8 peak: their
  // operands arrive twice as fast for the same memory and shared-memory bandwidth, so they
  // reach less of their peak.
  double gemm_max_fp8 = 0.7;
  double gemm_half_flops = 1e9;
  // GEMMs whose smallest dimension is below `gemm_half_dim` lose efficiency the same way
  // (dim / (dim + half)): thin GEMMs cannot fill the tensor cores.
  double gemm_half_dim = 32;
  // Wave quantization (NVIDIA, "Matrix Multiplication Background" user's guide): a GEMM
  // runs as tiles of gemm_tile_m x gemm_tile_n outputs on `compute_units` SMs at a time, and
  // a last wave that fills only part of the SMs wastes the rest. 0 compute units turns it
  // off (CPUs).
  int compute_units = 0;
  int gemm_tile_m = 256;
  int gemm_tile_n = 128;
  // Attention (batched QK^T and attention over V) and convolutions relative to a GEMM of
  // the same size.
  double attention_factor = 0.8;
  double conv_factor = 0.9;
  // Memory-bound kernels stream at this fraction of HBM bandwidth.
  double memory_bandwidth_fraction = 0.8;
  // Fixed cost of every kernel (launch and tail).
  Duration kernel_launch = Duration::ns(5000);
  // While a communication kernel runs on the device, compute kernels run this much slower
  // (NCCL kernels take SMs and HBM bandwidth).
  double comm_compute_slowdown = 0.1;
  // Fractions of the line rate that transfers over the device's NVLink and PCIe links
  // reach: packet headers, flow control and the collective library's own protocol take
  // the rest. Cluster builders scale those links' capacities by them.
  double nvlink_efficiency = 0.8;
  double pcie_efficiency = 0.8;
  // Units of one model differ in speed (manufacturing and power management): a cluster's
  // devices run at speeds spread evenly over 1 +- speed_variation / 2 of these figures,
  // which describe the median unit. Synchronous steps wait for their slowest members. A
  // unit's speed scales all of its compute tasks' time, memory-bound kernels included:
  // power management lowers the clocks the whole chip runs at.
  double speed_variation = 0;
  // The fraction of the compute rates above that the device sustains through a training
  // run: an empirical correction, calibrated on a published run (scenarios/calibration/),
  // of what the kernel-benchmark figures above miss there (clocks over a long run, the
  // kernels picked for real shapes, attention; not separated). The roofline cost model
  // divides FLOP-bound kernel time by it, not memory-bound time nor launches: the runs that
  // calibrate it are FLOP-bound. 1 where no run has calibrated it.
  double sustained_compute_fraction = 1;
  // The collective library's protocols on this device (see ProtocolCosts): none unless the
  // catalog or the scenario says, and then collectives cost their transfers alone.
  ProtocolTable collective_protocols{};
  // Device memory the GEMM library keeps as its workspace for the whole run (cuBLAS's
  // recommended size; a training step counts it with the model states).
  Bytes gemm_workspace = MiB(4);
  // NCCL's communicator buffers (sim/nccl_figures.h): the channels its collectives run on
  // inside a node, and its peer-to-peer channels per peer in the same node. Each channel of
  // a communicator holds a pair of connections' buffers on every member. The catalog
  // derives both from the GPU's NVLinks and architecture as NCCL's topology search does;
  // 2 and 2 are NCCL's figures for GPUs on PCIe Gen3. 0 channels: the device runs no NCCL
  // (CPUs).
  int nccl_channels = 2;
  int nccl_p2p_channels = 2;
  // Compute capability, major x 10 + minor (90: Hopper): picks NCCL's speed tables and
  // rules for communicators that cross nodes. 0: not given (the tables before Hopper).
  int compute_capability = 0;
};

struct DeviceSpec {
  std::string name;
  std::string description;
  DeviceKind kind = DeviceKind::kGpu;
  // Dense peak per dtype; zero where the device has no such math.
  std::array<FlopRate, kAllDTypes.size()> peak{};
  Bytes memory_capacity;
  Bandwidth memory_bandwidth;
  // Per direction, all of the device's NVLink (or equivalent) links together; zero if none.
  Bandwidth intra_node_bandwidth;
  // Per direction, the device's host interface (PCIe generation x16).
  Bandwidth pcie_bandwidth;
  DeviceEfficiency efficiency;

  FlopRate peak_for(DType t) const { return peak[static_cast<size_t>(t)]; }
};

}  // namespace dtsim
