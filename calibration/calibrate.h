// A calibration sweep: the distinct kernels of a lowered step (or a grid), each measured
// on this machine's backend into a cost database, within a time budget and stoppable.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "calibration/cost_database.h"
#include "calibration/measure.h"
#include "sim/run_control.h"
#include "sim/task_graph.h"
#include "sim/units.h"

namespace dtsim::calibration {

// The distinct kernels (by cost key) of a graph's compute tasks, in first-seen order.
std::vector<OpSignature> distinct_kernels(const TaskGraph& graph);

// With each GEMM, its neighbours at n + 1 (and m + 1, k + 1) in the same family, so that a
// database shows the steps that tile quantisation puts between sizes.
std::vector<OpSignature> with_gemm_neighbours(const std::vector<OpSignature>& ops);

// The cores this process may run on (its affinity mask); 0 when the kernel does not say.
int usable_cores();

// This CPU: its model (/proc/cpuinfo), the cores the process may use, the BLAS and the
// threads it runs with, for the device spec `catalog_name` it prices.
DeviceIdentity cpu_identity(const std::string& catalog_name);

struct SweepOptions {
  MeasurementPolicy policy;
  std::optional<Duration> budget;  // stop measuring (keeping what was measured) past this
  RunControl control;              // progress ("calibration", ops done, ops in all) and stop
  // CPU: copies of the timed kernel run meanwhile on this many other cores (CoRunners), as
  // the other ranks of a step on the same CPU run theirs; recorded in the device identity.
  int co_runners = 0;
};

struct SweepResult {
  CostDatabase db;
  // Ops the backend cannot run, one sentence each (the kernel library's reason).
  std::vector<std::string> refused;
  int noisy = 0;       // measured, but their spread stayed above the policy's target
  int unmeasured = 0;  // left when the budget ran out or the sweep was stopped
  bool cancelled = false;
};

// Measures every op on the CPU backend (kernels/) with the steady-clock timer, beside
// options.co_runners co-runners. Throws std::invalid_argument when there are not cores enough
// for them.
SweepResult sweep_cpu(const std::vector<OpSignature>& ops, const DeviceIdentity& device,
                      const SweepOptions& options);

// GPU 0: its name, SMs, clocks, memory and the driver and library versions, for the
// device spec `catalog_name` it prices. Throws std::runtime_error without the CUDA backend
// or a device.
DeviceIdentity cuda_identity(const std::string& catalog_name);

// Measures every op the CUDA backend runs (GEMMs so far; the others are refused with the
// reason) on GPU 0 with CUPTI's timestamps, the L2 evicted before each repeat. Throws
// std::runtime_error when CUPTI cannot trace here.
SweepResult sweep_cuda(const std::vector<OpSignature>& ops, const DeviceIdentity& device,
                       const SweepOptions& options);

}  // namespace dtsim::calibration
