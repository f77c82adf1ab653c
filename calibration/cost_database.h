// The cost database: per op signature the timings of its real kernel on one device, with
// the device's identity. A versioned JSON document (docs/cost-database.md); calibration
// fills it, the measured cost model reads it, the CLI writes it through the atomic writer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/link_calibration.h"
#include "calibration/sample_stats.h"
#include "sim/op_signature.h"

namespace dtsim::calibration {

inline constexpr const char* kCostDatabaseFormat = "dtsim-cost-database";
// Version 2 added the measured links, version 3 the kernels' times alone beside their times
// among co-runners; files of versions 1 and 2 are still read.
inline constexpr int kCostDatabaseVersion = 3;

// What the timings were measured on. A CPU's identity is its model, the cores, the threads
// the kernels used and the BLAS; a GPU's its name, SMs, clocks, memory and the driver and
// library versions.
struct DeviceIdentity {
  std::string backend;       // "cpu" or "cuda"
  std::string name;          // the hardware's own name ("AMD EPYC", "NVIDIA H200")
  std::string catalog_name;  // the device spec it prices (`dtsim list devices`: "CPU", "H200")
  std::string timer;         // "steady_clock" or "cupti"
  std::string measured_at;   // ISO 8601, UTC
  int cores = 0;             // CPU
  int threads = 0;
  // Copies of each kernel that ran on other cores while it was timed (calibration/
  // co_runners.h): 0 for a kernel timed alone, as every database before the field was.
  int co_runners = 0;
  // The machine's speed while it measured: reference_kernel_s() (calibration/
  // speed_reference.h) before and after the sweep, their mean; 0 when not taken.
  double reference_s = 0;
  double clock_mhz = 0;  // the core clock when measured (/proc/cpuinfo); 0 when unknown
  std::string blas;
  int sm_count = 0;  // GPU
  double sm_clock_mhz = 0;
  double memory_clock_mhz = 0;
  int64_t memory_bytes = 0;
  std::string driver, cuda, cublas, cudnn, nccl;
};

// Where a timing was taken: by a calibration sweep, the kernel alone; or inside a real
// step by the executor, between the step's other kernels.
enum class MeasurementContext : uint8_t { kIsolation, kInStep };

struct CostEntry {
  OpSignature op;
  MeasurementContext context = MeasurementContext::kIsolation;
  std::vector<double> samples_s;
  SampleStats stats;
  bool noisy = false;
  // A CPU kernel timed beside co-runners (DeviceIdentity::co_runners > 0) is also timed
  // with the CPU to itself, just before, so that the simulator can price it by how many of
  // its neighbours compute at each moment (sim/compute_model.h). Empty otherwise.
  std::vector<double> alone_samples_s;
  SampleStats alone;  // of alone_samples_s; count 0 without them
};

struct CostDatabase {
  int version = kCostDatabaseVersion;  // the file's, when read; written as the current one
  DeviceIdentity device;
  std::vector<CostEntry> entries;
  // Collectives measured over the collective library, one fit per link class.
  std::vector<LinkCalibration> links;
};

nlohmann::ordered_json cost_database_to_json(const CostDatabase& db);
// Throws InputError (sim/input_error.h) naming `source` and the field: a document of
// another format or a schema version it does not read, or a field missing or of the wrong type.
CostDatabase cost_database_from_json(const nlohmann::json& doc, const std::string& source);
// Reads and parses `path`; a file that cannot be read or parsed is an InputError too.
CostDatabase read_cost_database(const std::string& path);

}  // namespace dtsim::calibration
