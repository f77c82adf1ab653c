// The measured curve's reading: sorted, monotone points, log-log between neighbours.
#include "calibration/measured_curve.h"

#include <algorithm>
#include <cmath>

namespace dtsim::calibration {

MeasuredCurve::MeasuredCurve(std::vector<Point> points) : points_(std::move(points)) {
  for (Point& p : points_) p.seconds = std::max(p.seconds, 1e-12);
  std::sort(points_.begin(), points_.end(),
            [](const Point& a, const Point& b) { return a.work < b.work; });
  for (size_t i = 1; i < points_.size(); ++i) {
    points_[i].seconds = std::max(points_[i].seconds, points_[i - 1].seconds);
  }
}

OpCost MeasuredCurve::at(double w, CostSource exact_source) const {
  const std::vector<Point>& p = points_;
  const auto seconds = [](double s) { return Duration::from_seconds(s); };
  if (p.size() == 1 || w > p.back().work || w < p.front().work) {
    // Beyond the measured sizes time grows in proportion to the work (bound by its FLOPs
    // or bytes there); below them, along the slope of the two smallest.
    if (w > p.back().work || p.size() == 1) {
      const Point& edge = w > p.back().work ? p.back() : p.front();
      if (w == edge.work) return {seconds(edge.seconds), exact_source};
      return {seconds(edge.seconds * w / edge.work), CostSource::kExtrapolated};
    }
    const double slope = std::clamp(
        std::log(p[1].seconds / p[0].seconds) / std::log(p[1].work / p[0].work), 0.0, 1.0);
    return {seconds(p[0].seconds * std::pow(w / p[0].work, slope)), CostSource::kExtrapolated};
  }
  const auto hi =
      std::lower_bound(p.begin(), p.end(), w, [](const Point& a, double v) { return a.work < v; });
  if (hi->work == w) return {seconds(hi->seconds), exact_source};
  const auto lo = hi - 1;
  const double f = std::log(w / lo->work) / std::log(hi->work / lo->work);
  return {seconds(std::exp(std::log(lo->seconds) + f * std::log(hi->seconds / lo->seconds))),
          CostSource::kInterpolated};
}

}  // namespace dtsim::calibration
