// Communication calibration on this machine: dtsim-comm-probe launched with mpirun on
// ranks pinned one per core, its samples read back and the link class fitted to them.
#pragma once

#include <chrono>
#include <filesystem>
#include <stop_token>
#include <string>
#include <vector>

#include "calibration/link_calibration.h"
#include "calibration/measure.h"
#include "sim/collectives/collective_plan.h"
#include "sim/units.h"

namespace dtsim::calibration {

struct CollectiveProbeOptions {
  std::filesystem::path probe;  // the dtsim-comm-probe executable
  int ranks = 2;
  std::vector<CollectiveOp> ops = {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter,
                                   CollectiveOp::kAllGather, CollectiveOp::kAllToAll,
                                   CollectiveOp::kBroadcast, CollectiveOp::kSendRecv};
  Bytes min_bytes = KiB(4);
  Bytes max_bytes = MiB(64);
  int factor = 2;  // sizes min, min x factor, ... up to max
  MeasurementPolicy policy;
  std::chrono::milliseconds deadline = std::chrono::minutes(10);
  std::stop_token stop;
};

// The command line that runs the probe: mpirun on `ranks` ranks bound one per core, over
// shared memory (the intra-node link class), with --allow-run-as-root when run as root.
std::vector<std::string> probe_command(const CollectiveProbeOptions& o,
                                       const std::filesystem::path& out);

// Runs the probe and fits the intra-node link class. Throws std::runtime_error naming what
// failed (no mpirun, more ranks than cores, the probe's exit and output, a time-out);
// returns an empty calibration (ranks 0) when stopped.
LinkCalibration measure_collectives(const CollectiveProbeOptions& o);

// The probe's JSON document (its format below) read into measurements; InputError naming
// `source` and the field otherwise.
LinkCalibration read_probe_output(const std::filesystem::path& path);

}  // namespace dtsim::calibration
