// Time against work from measured points: exact at a measured size, log-log interpolation
// between two, proportional beyond the largest and along the two smallest's slope below
// them. The measured models of kernels and of collectives both read their points so.
#pragma once

#include <vector>

#include "sim/cost_model.h"

namespace dtsim::calibration {

class MeasuredCurve {
 public:
  struct Point {
    double work = 0;
    double seconds = 0;
  };
  // Points in any order, work > 0; sorted here, and made non-decreasing in time: more work
  // never takes less time, and interpolating through a dip (noise, or a size the kernel
  // happens to like) would price a larger op below a smaller one. A zero time (a hand-made
  // database; no timer reads it) would break log space: a picosecond stands for it.
  explicit MeasuredCurve(std::vector<Point> points);
  bool empty() const { return points_.empty(); }
  bool has_positive_work() const { return !points_.empty() && points_.front().work > 0; }
  // `exact_source` tags a time read at a measured work (kernels: interpolated, as the exact
  // key was not found; collectives: measured). Needs !empty() and work > 0.
  OpCost at(double work, CostSource exact_source) const;

 private:
  std::vector<Point> points_;
};

}  // namespace dtsim::calibration
