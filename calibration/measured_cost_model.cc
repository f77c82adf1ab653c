// Exact lookups, log-log interpolation within a family, proportional extrapolation.
#include "calibration/measured_cost_model.h"

#include <algorithm>
#include <cmath>

#include "calibration/cost_key.h"
#include "models/cost_model.h"

namespace dtsim::calibration {

MeasuredCostModel::MeasuredCostModel(const CostDatabase& db, std::string device,
                                     std::unique_ptr<CostModel> fallback)
    : device_(std::move(device)), fallback_(std::move(fallback)) {
  // An op measured more than once (an isolation sweep and a real step) keeps the last.
  for (const CostEntry& e : db.entries) exact_[cost_key(e.op)] = e.stats.median_s;
  for (const CostEntry& e : db.entries) {
    // A zero time (a hand-made database; no timer reads it) would break the log-space
    // interpolation: a picosecond stands for it.
    family_[family_key(e.op)].push_back({work_of(e.op), std::max(e.stats.median_s, 1e-12)});
  }
  for (auto& [key, points] : family_) {
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.work < b.work; });
    // More work never takes less time: a dip between two sizes is noise (or a size the
    // kernel happens to like), and interpolating through it would price a larger op below
    // a smaller one.
    for (size_t i = 1; i < points.size(); ++i) {
      points[i].seconds = std::max(points[i].seconds, points[i - 1].seconds);
    }
  }
}

OpCost MeasuredCostModel::price(const OpSignature& op, const DeviceSpec& device) const {
  if (device.name != device_) return fallback_->price(op, device);
  if (const auto it = exact_.find(cost_key(op)); it != exact_.end()) {
    return {Duration::from_seconds(it->second), CostSource::kMeasured};
  }
  const auto fam = family_.find(family_key(op));
  const double w = work_of(op);
  if (fam == family_.end() || !(w > 0) || fam->second.front().work <= 0) {
    return fallback_->price(op, device);
  }
  const std::vector<Point>& p = fam->second;
  const auto seconds = [](double s) { return Duration::from_seconds(s); };
  if (p.size() == 1 || w > p.back().work || w < p.front().work) {
    // Beyond the measured sizes time grows in proportion to the work (the kernel is bound
    // by its FLOPs or bytes there); below them, along the slope of the two smallest.
    if (w > p.back().work || p.size() == 1) {
      const Point& edge = w > p.back().work ? p.back() : p.front();
      return {seconds(edge.seconds * w / edge.work), CostSource::kExtrapolated};
    }
    const double slope = std::clamp(
        std::log(p[1].seconds / p[0].seconds) / std::log(p[1].work / p[0].work), 0.0, 1.0);
    return {seconds(p[0].seconds * std::pow(w / p[0].work, slope)), CostSource::kExtrapolated};
  }
  const auto hi =
      std::lower_bound(p.begin(), p.end(), w, [](const Point& a, double v) { return a.work < v; });
  if (hi->work == w) return {seconds(hi->seconds), CostSource::kInterpolated};
  const auto lo = hi - 1;
  const double f = std::log(w / lo->work) / std::log(hi->work / lo->work);
  return {seconds(std::exp(std::log(lo->seconds) + f * std::log(hi->seconds / lo->seconds))),
          CostSource::kInterpolated};
}

std::vector<HoldoutError> holdout_errors(const CostDatabase& db, int every) {
  std::map<std::string, std::vector<size_t>> families;
  for (size_t i = 0; i < db.entries.size(); ++i) {
    families[family_key(db.entries[i].op)].push_back(i);
  }
  std::vector<HoldoutError> out;
  DeviceSpec device;
  device.name = db.device.catalog_name;
  for (auto& [key, members] : families) {
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return work_of(db.entries[a].op) < work_of(db.entries[b].op);
    });
    // Every `every`-th inner member (the first and last are never held out: nothing would
    // lie beyond them to interpolate from).
    for (size_t m = 1; m + 1 < members.size(); m += static_cast<size_t>(every)) {
      CostDatabase rest = db;
      rest.entries.erase(rest.entries.begin() + static_cast<std::ptrdiff_t>(members[m]));
      const MeasuredCostModel model(rest, device.name,
                                    std::make_unique<models::RooflineCostModel>());
      const CostEntry& held = db.entries[members[m]];
      const OpCost c = model.price(held.op, device);
      if (c.source != CostSource::kInterpolated) continue;  // an equal key measured twice
      out.push_back({held.op, held.stats.median_s, c.time.seconds(),
                     c.time.seconds() / held.stats.median_s - 1});
    }
  }
  return out;
}

}  // namespace dtsim::calibration
