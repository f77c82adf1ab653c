// What repeated timings of one kernel say: median, the 20th and 80th percentiles and the
// coefficient of variation.
#pragma once

#include <vector>

namespace dtsim::calibration {

struct SampleStats {
  int count = 0;
  double median_s = 0;
  double p20_s = 0;
  double p80_s = 0;
  double mean_s = 0;
  double cv = 0;  // standard deviation over mean
};

// Percentiles by linear interpolation between order statistics (numpy's default).
// `samples` in seconds; empty gives all zeros.
SampleStats stats_of(std::vector<double> samples);

}  // namespace dtsim::calibration
