// Order statistics and spread of timing samples.
#include "calibration/sample_stats.h"

#include <algorithm>
#include <cmath>

namespace dtsim::calibration {

namespace {

double percentile(const std::vector<double>& sorted, double p) {
  const double at = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

SampleStats stats_of(std::vector<double> samples) {
  SampleStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = static_cast<int>(samples.size());
  s.median_s = percentile(samples, 0.5);
  s.p20_s = percentile(samples, 0.2);
  s.p80_s = percentile(samples, 0.8);
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean_s = sum / s.count;
  double sq = 0;
  for (double v : samples) sq += (v - s.mean_s) * (v - s.mean_s);
  const double sd = s.count > 1 ? std::sqrt(sq / (s.count - 1)) : 0;
  s.cv = s.mean_s > 0 ? sd / s.mean_s : 0;
  return s;
}

}  // namespace dtsim::calibration
