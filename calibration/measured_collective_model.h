// The measured collective model: a call priced from a cost database's measured
// collectives, for groups like the one measured (one node, as many ranks, the device the
// database prices): by its op's time measured inside real steps at its very size where the
// database has one (LinkCalibration::in_step), else by the measured curve of its op in
// message size.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calibration/link_calibration.h"
#include "calibration/measured_curve.h"
#include "sim/collective_cost_model.h"

namespace dtsim::calibration {

class MeasuredCollectiveModel final : public CollectiveCostModel {
 public:
  // Prices calls over devices named `device` (DeviceSpec::name) from the intra-node
  // measurements in `links`.
  MeasuredCollectiveModel(const std::vector<LinkCalibration>& links, std::string device);
  // Nothing for another device, a group spanning nodes, another number of ranks (the
  // measurements say nothing of how a call scales with ranks; the link fit, which the
  // network model then uses, does), or an op that was not measured.
  std::optional<CollectiveCost> price(CollectiveOp op, const GroupLayout& layout,
                                      const DeviceSpec& device, Bytes bytes) const override;
  bool empty() const { return curves_.empty(); }

 private:
  std::string device_;
  int ranks_ = 0;
  std::map<CollectiveOp, MeasuredCurve> curves_;  // median seconds against bytes
  std::map<std::pair<CollectiveOp, int64_t>, double> in_step_s_;  // median, by op and bytes
};

// One held-out size of one measured collective: its median against what the curve of the
// other sizes predicts for it by interpolation.
struct CollectiveHoldout {
  CollectiveOp op = CollectiveOp::kAllReduce;
  Bytes bytes;
  double measured_s = 0;
  double predicted_s = 0;
  double error = 0;  // predicted / measured - 1
};

// Holds out every `every`-th inner size of each collective of `links` (never the smallest
// or largest: nothing lies beyond them) and predicts it from the rest.
std::vector<CollectiveHoldout> collective_holdout_errors(const LinkCalibration& links,
                                                         int every = 2);

}  // namespace dtsim::calibration
