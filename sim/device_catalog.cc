// Device catalog data. Figures are vendor datasheet peaks (dense, no sparsity) for the
// SXM variants unless the name says otherwise; NVLink and PCIe are per direction.
#include "sim/device_catalog.h"

#include <vector>

namespace dtsim {
namespace {

struct Peaks {
  double fp64, fp32, tf32, fp16, bf16, fp8, int8;  // TFLOPS (TOPS for int8)
};

DeviceSpec make(std::string name, std::string description, DeviceKind kind, Peaks p,
                double memory_gib, double memory_gbps, double nvlink_gbps, double pcie_gbps) {
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
  return d;
}

const std::vector<DeviceSpec>& catalog() {
  // PCIe x16 per direction: Gen3 15.75 GB/s, Gen4 31.5 GB/s, Gen5 63 GB/s.
  static const std::vector<DeviceSpec> devices = {
      make("P40", "NVIDIA Tesla P40 (Pascal, PCIe, 24 GB GDDR5; FP16 math at 1/64 rate)",
           DeviceKind::kGpu, {0.37, 11.76, 0, 0.18, 0, 0, 47.0}, 24, 346, 0, 15.75),
      make("P100", "NVIDIA Tesla P100 SXM2 16 GB (Pascal, NVLink 1: 4 links x 20 GB/s)",
           DeviceKind::kGpu, {5.3, 10.6, 0, 21.2, 0, 0, 0}, 16, 732, 80, 15.75),
      make("P100-PCIe", "NVIDIA Tesla P100 PCIe 16 GB (Pascal, no NVLink)", DeviceKind::kGpu,
           {4.7, 9.3, 0, 18.7, 0, 0, 0}, 16, 732, 0, 15.75),
      make("V100", "NVIDIA Tesla V100 SXM2 16 GB (Volta, NVLink 2: 6 links x 25 GB/s)",
           DeviceKind::kGpu, {7.8, 15.7, 0, 125, 0, 0, 62}, 16, 900, 150, 15.75),
      make("V100-32GB", "NVIDIA Tesla V100 SXM2 32 GB (Volta, NVLink 2: 6 links x 25 GB/s)",
           DeviceKind::kGpu, {7.8, 15.7, 0, 125, 0, 0, 62}, 32, 900, 150, 15.75),
      make("A100-40GB", "NVIDIA A100 SXM4 40 GB (Ampere, NVLink 3: 12 links x 25 GB/s)",
           DeviceKind::kGpu, {19.5, 19.5, 156, 312, 312, 0, 624}, 40, 1555, 300, 31.5),
      make("A100-80GB", "NVIDIA A100 SXM4 80 GB (Ampere, NVLink 3: 12 links x 25 GB/s)",
           DeviceKind::kGpu, {19.5, 19.5, 156, 312, 312, 0, 624}, 80, 2039, 300, 31.5),
      make("H100", "NVIDIA H100 SXM5 80 GB (Hopper, NVLink 4: 18 links x 25 GB/s)",
           DeviceKind::kGpu, {67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9}, 80, 3350, 450, 63),
      make("H200", "NVIDIA H200 SXM 141 GB (Hopper, HBM3e, NVLink 4: 18 links x 25 GB/s)",
           DeviceKind::kGpu, {67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9}, 141, 4800, 450, 63),
      make("CPU", "Generic 2-socket x86 server CPU (2 x 32 cores AVX-512, 8-channel DDR4)",
           DeviceKind::kCpu, {2.0, 4.0, 0, 0, 0, 0, 0}, 256, 200, 0, 15.75),
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

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFp64: return "fp64";
    case DType::kFp32: return "fp32";
    case DType::kTf32: return "tf32";
    case DType::kFp16: return "fp16";
    case DType::kBf16: return "bf16";
    case DType::kFp8: return "fp8";
    case DType::kInt8: return "int8";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

int dtype_size_bytes(DType t) {
  switch (t) {
    case DType::kFp64: return 8;
    case DType::kFp32:
    case DType::kTf32: return 4;
    case DType::kFp16:
    case DType::kBf16: return 2;
    case DType::kFp8:
    case DType::kInt8: return 1;
  }
  return 4;
}

}  // namespace dtsim
