// Measured collective times read by op and size, for the group shape they were taken on.
#include "calibration/measured_collective_model.h"

namespace dtsim::calibration {

MeasuredCollectiveModel::MeasuredCollectiveModel(const std::vector<LinkCalibration>& links,
                                                 std::string device)
    : device_(std::move(device)) {
  for (const LinkCalibration& l : links) {
    if (l.link_class != "intra_node") continue;
    ranks_ = l.ranks;
    for (const CollectiveMeasurement& c : l.collectives) {
      std::vector<MeasuredCurve::Point> points;
      for (const CollectivePoint& p : c.points) {
        points.push_back({static_cast<double>(p.bytes.count()), p.stats.median_s});
      }
      if (!points.empty()) curves_.insert_or_assign(c.op, MeasuredCurve(std::move(points)));
    }
    for (const CollectiveMeasurement& c : l.in_step) {
      for (const CollectivePoint& p : c.points) {
        in_step_s_[{c.op, p.bytes.count()}] = p.stats.median_s;
      }
    }
  }
}

std::optional<CollectiveCost> MeasuredCollectiveModel::price(CollectiveOp op,
                                                             const GroupLayout& layout,
                                                             const DeviceSpec& device,
                                                             Bytes bytes) const {
  if (device.name != device_ || static_cast<int>(layout.members.size()) != ranks_ ||
      bytes.count() <= 0) {
    return std::nullopt;
  }
  for (size_t i = 1; i < layout.members.size(); ++i) {
    if (layout.node_of[i] != layout.node_of[0] || layout.region_of[i] != layout.region_of[0]) {
      return std::nullopt;
    }
  }
  if (const auto in_step = in_step_s_.find({op, bytes.count()}); in_step != in_step_s_.end()) {
    return CollectiveCost{Duration::from_seconds(in_step->second), CostSource::kMeasured};
  }
  const auto it = curves_.find(op);
  if (it == curves_.end()) return std::nullopt;
  const OpCost c = it->second.at(static_cast<double>(bytes.count()), CostSource::kMeasured);
  return CollectiveCost{c.time, c.source};
}

std::vector<CollectiveHoldout> collective_holdout_errors(const LinkCalibration& links, int every) {
  std::vector<CollectiveHoldout> out;
  for (const CollectiveMeasurement& c : links.collectives) {
    for (size_t held = 1; held + 1 < c.points.size(); held += static_cast<size_t>(every)) {
      std::vector<MeasuredCurve::Point> rest;
      for (size_t i = 0; i < c.points.size(); ++i) {
        if (i != held) {
          rest.push_back(
              {static_cast<double>(c.points[i].bytes.count()), c.points[i].stats.median_s});
        }
      }
      const CollectivePoint& p = c.points[held];
      const double predicted = MeasuredCurve(std::move(rest))
                                   .at(static_cast<double>(p.bytes.count()), CostSource::kMeasured)
                                   .time.seconds();
      out.push_back({c.op, p.bytes, p.stats.median_s, predicted, predicted / p.stats.median_s - 1});
    }
  }
  return out;
}

}  // namespace dtsim::calibration
