// Communication calibration: collective and send/recv times measured against message size
// over the real collective library, and the latency + bandwidth of one link class fitted to
// them through the simulator's own cost formula, so the network models can use them in
// place of the catalog's figures.
#pragma once

#include <string>
#include <vector>

#include "calibration/sample_stats.h"
#include "sim/collectives/collective_plan.h"
#include "sim/units.h"

namespace dtsim::calibration {

// One message size of one collective: every timed repeat, each the slowest rank's time of
// the call (nccl-tests' way: a barrier, the call, the maximum over ranks).
struct CollectivePoint {
  Bytes bytes;  // nccl-tests' "size", as dtsim's collectives count it (CollectivePlan::bytes)
  std::vector<double> samples_s;
  SampleStats stats;
  bool noisy = false;
};

struct CollectiveMeasurement {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::vector<CollectivePoint> points;  // by size, ascending
};

// What the fit says about the link class: per call, per hop one piece of data crosses, and
// the rate the data moves at. They replace a node's intra-node link (bandwidth, latency 0)
// and the device's collective protocol (one protocol: base, intra_node_step, full rate).
struct LinkFit {
  Duration base;
  Duration hop;
  Bandwidth bandwidth;
  // The fitted formula against the medians it was fitted to: |predicted / measured - 1|.
  double median_error = 0;
  double worst_error = 0;
  // The same for the reducing collectives, which the fit leaves out: what the reduction's
  // arithmetic adds, which the simulator's network model does not have.
  double reducing_median_error = 0;
};

// All measurements of one link class ("intra_node": ranks of one node; "inter_node", which
// one machine cannot measure, keeps the catalog's figures).
struct LinkCalibration {
  std::string link_class = "intra_node";
  int ranks = 0;
  std::string library;  // the collective library's own version string
  std::vector<CollectiveMeasurement> collectives;
  LinkFit fit;
  // Calls timed inside real steps (`dtsim validate --update-costs`): each sample one call of
  // one step, from its last member's arrival to its last member's end, by op and size as
  // the measured model prices them. A step makes each call once, after kernels, and such a
  // call took 2-3 times the probe's back-to-back time on this project's CPU machine
  // (docs/real-execution.md), so the measured model prefers these at their sizes. Not
  // fitted: the fit describes the link, these the calls as a step makes them.
  std::vector<CollectiveMeasurement> in_step;
};

// The algorithm whose cost formula a measured collective is read with: ring for all-reduce,
// reduce-scatter, all-gather, broadcast and reduce; direct for all-to-all and send/recv.
CollectiveAlgorithm calibrated_algorithm(CollectiveOp op);

// The two parts of the simulator's closed form (sim/collectives/planner.h) for `op` over
// `ranks` members of one node: the hops one piece crosses (protocol_latency's count) and
// the bytes the busiest rank moves, step after step (estimate_bandwidth_time at 1 byte per
// second).
struct CollectiveShape {
  double hops = 0;
  double bus_bytes = 0;
};
CollectiveShape collective_shape(CollectiveOp op, int ranks, Bytes bytes);

// base + hops x hop + bus_bytes / bandwidth, in seconds.
double predicted_seconds(const LinkFit& fit, CollectiveOp op, int ranks, Bytes bytes);

// Weighted least squares of the medians of the collectives that only move data (all-gather,
// all-to-all, broadcast, send/recv: what a link does; relative errors, so a 4 KiB call
// counts as much as a 64 MiB one) on base, hop and 1 / bandwidth, none negative; the errors
// filled in. The reducing collectives are measured and compared, not fitted: their extra
// time is the CPU's (or GPU's) reduction arithmetic, not the link's.
// Throws std::invalid_argument when the points cannot determine a bandwidth (no two sizes).
LinkFit fit_link(const LinkCalibration& links);

}  // namespace dtsim::calibration
