// Exact lookups, log-log interpolation within a family, proportional extrapolation.
#include "calibration/measured_cost_model.h"

#include <set>

#include "calibration/cost_key.h"
#include "models/cost_model.h"

namespace dtsim::calibration {

MeasuredCostModel::MeasuredCostModel(const CostDatabase& db, std::string device,
                                     std::unique_ptr<CostModel> fallback)
    : device_(std::move(device)), fallback_(std::move(fallback)), co_runners_(db.device.co_runners) {
  // An op measured more than once keeps its time measured inside a real step (the
  // feedback of dtsim validate --update-costs) over its isolated one, else the last one.
  std::map<std::string, const CostEntry*> chosen;
  for (const CostEntry& e : db.entries) {
    const CostEntry*& c = chosen[cost_key(e.op)];
    if (!c || e.context == MeasurementContext::kInStep ||
        c->context != MeasurementContext::kInStep) {
      c = &e;
    }
  }
  std::map<std::string, std::vector<MeasuredCurve::Point>> points, alone_points;
  std::set<std::string> not_all_alone;  // families with a member not timed alone (in-step)
  for (const auto& [key, e] : chosen) {
    const bool alone = co_runners_ > 0 && !e->alone_samples_s.empty();
    exact_[key] = {e->stats.median_s, alone ? e->alone.median_s : 0};
    const std::string family = family_key(e->op);
    points[family].push_back({work_of(e->op), e->stats.median_s});
    if (alone) {
      alone_points[family].push_back({work_of(e->op), e->alone.median_s});
    } else {
      not_all_alone.insert(family);
    }
  }
  for (auto& [key, p] : points) family_.emplace(key, MeasuredCurve(std::move(p)));
  // A family priced by one curve among co-runners and another alone must have both at
  // every size: mixed, the two curves would bend at different points.
  for (auto& [key, p] : alone_points) {
    if (!not_all_alone.contains(key)) alone_family_.emplace(key, MeasuredCurve(std::move(p)));
  }
}

OpCost MeasuredCostModel::price(const OpSignature& op, const DeviceSpec& device) const {
  if (device.name != device_) return fallback_->price(op, device);
  if (const auto it = exact_.find(cost_key(op)); it != exact_.end()) {
    OpCost c{Duration::from_seconds(it->second.median_s), CostSource::kMeasured};
    if (it->second.alone_s > 0) {
      c.alone = Duration::from_seconds(it->second.alone_s);
      c.co_runners = co_runners_;
    }
    return c;
  }
  const std::string family = family_key(op);
  const auto fam = family_.find(family);
  const double w = work_of(op);
  if (fam == family_.end() || !(w > 0) || !fam->second.has_positive_work()) {
    return fallback_->price(op, device);
  }
  // A family's size measured under another exact key (a flag the key keeps) reads as
  // interpolated: it is not this very signature.
  OpCost c = fam->second.at(w, CostSource::kInterpolated);
  if (const auto alone = alone_family_.find(family); alone != alone_family_.end()) {
    c.alone = alone->second.at(w, CostSource::kInterpolated).time;
    c.co_runners = co_runners_;
  }
  return c;
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
