// Fitting a link class's latency and bandwidth to measured collectives through the
// simulator's closed form, so the figures mean in the model what they meant when measured.
#include "calibration/link_calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "sim/collectives/planner.h"

namespace dtsim::calibration {

namespace {

constexpr int kUnknowns = 3;  // base, hop, 1 / bandwidth
using Row = std::array<double, kUnknowns>;

GroupLayout one_node(int ranks) {
  GroupLayout l;
  for (int r = 0; r < ranks; ++r) {
    l.members.push_back(r);
    l.node_of.push_back(0);
    l.region_of.push_back(0);
  }
  return l;
}

// Least squares of rows x = 1 over the unknowns in `free` (the others held at 0), with
// each column scaled to its largest entry so bytes and counts do not swamp each other.
// Empty when the free columns are dependent.
std::optional<Row> solve(const std::vector<Row>& rows, const std::array<bool, kUnknowns>& free) {
  std::vector<int> cols;
  for (int j = 0; j < kUnknowns; ++j) {
    if (free[static_cast<size_t>(j)]) cols.push_back(j);
  }
  const size_t n = cols.size();
  std::array<double, kUnknowns> scale{};
  for (size_t a = 0; a < n; ++a) {
    for (const Row& row : rows) {
      scale[a] = std::max(scale[a], std::abs(row[static_cast<size_t>(cols[a])]));
    }
    if (!(scale[a] > 0)) return std::nullopt;
  }
  // Normal equations, augmented with the right-hand side.
  std::array<std::array<double, kUnknowns + 1>, kUnknowns> m{};
  for (const Row& row : rows) {
    for (size_t a = 0; a < n; ++a) {
      const double va = row[static_cast<size_t>(cols[a])] / scale[a];
      for (size_t b = 0; b < n; ++b) m[a][b] += va * row[static_cast<size_t>(cols[b])] / scale[b];
      m[a][n] += va;
    }
  }
  for (size_t p = 0; p < n; ++p) {
    size_t best = p;
    for (size_t q = p + 1; q < n; ++q) {
      if (std::abs(m[q][p]) > std::abs(m[best][p])) best = q;
    }
    std::swap(m[p], m[best]);
    if (std::abs(m[p][p]) < 1e-9 * static_cast<double>(rows.size())) return std::nullopt;
    for (size_t q = 0; q < n; ++q) {
      if (q == p) continue;
      const double f = m[q][p] / m[p][p];
      for (size_t c = p; c <= n; ++c) m[q][c] -= f * m[p][c];
    }
  }
  Row x{};
  for (size_t a = 0; a < n; ++a) x[static_cast<size_t>(cols[a])] = m[a][n] / m[a][a] / scale[a];
  return x;
}

double squared_residual(const std::vector<Row>& rows, const Row& x) {
  double sum = 0;
  for (const Row& row : rows) {
    const double r = row[0] * x[0] + row[1] * x[1] + row[2] * x[2] - 1;
    sum += r * r;
  }
  return sum;
}

}  // namespace

CollectiveAlgorithm calibrated_algorithm(CollectiveOp op) {
  return op == CollectiveOp::kAllToAll || op == CollectiveOp::kSendRecv
             ? CollectiveAlgorithm::kDirect
             : CollectiveAlgorithm::kRing;
}

CollectiveShape collective_shape(CollectiveOp op, int ranks, Bytes bytes) {
  const GroupLayout layout = one_node(ranks);
  const CollectiveOptions options;
  const CollectiveAlgorithm algorithm = calibrated_algorithm(op);
  // One nanosecond per hop counts the hops; 1 GB/s makes a nanosecond of a byte.
  ProtocolCosts count;
  count.intra_node_step = Duration::ns(1);
  AlphaBeta unit;
  unit.intra_node_bw = Bandwidth::gb_per_s(1);
  unit.inter_node_bw = unit.intra_node_bw;
  unit.inter_region_bw = unit.intra_node_bw;
  CollectiveShape s;
  s.hops = static_cast<double>(
      protocol_latency(op, algorithm, layout, bytes, options, count).count_ns());
  s.bus_bytes = static_cast<double>(
      estimate_bandwidth_time(op, algorithm, layout, bytes, options, unit).count_ns());
  return s;
}

double predicted_seconds(const LinkFit& fit, CollectiveOp op, int ranks, Bytes bytes) {
  const CollectiveShape s = collective_shape(op, ranks, bytes);
  return fit.base.seconds() + s.hops * fit.hop.seconds() +
         s.bus_bytes / fit.bandwidth.bytes_per_second();
}

LinkFit fit_link(const LinkCalibration& links) {
  std::vector<Row> rows;
  std::vector<int64_t> sizes;
  for (const CollectiveMeasurement& c : links.collectives) {
    if (is_reducing(c.op)) continue;
    for (const CollectivePoint& p : c.points) {
      const double t = p.stats.median_s;
      if (!(t > 0)) continue;
      const CollectiveShape s = collective_shape(c.op, links.ranks, p.bytes);
      rows.push_back({1 / t, s.hops / t, s.bus_bytes / t});
      sizes.push_back(p.bytes.count());
    }
  }
  std::sort(sizes.begin(), sizes.end());
  const bool two_sizes = !sizes.empty() && sizes.front() != sizes.back();
  // Every subset of the unknowns held at zero, the best fit whose figures are all
  // non-negative; 1 / bandwidth must stay free and positive. When every point crosses the
  // same number of hops (two ranks: one hop for all data-moving collectives) per call and
  // per hop cannot be told apart; then the time goes per call (hop held at 0), which does
  // not grow with the ranks it was not measured at: the held-at-zero hop is tried first
  // and kept unless freeing it fits strictly better.
  std::optional<Row> best;
  double best_residual = 0;
  for (const std::array<bool, kUnknowns> free :
       {std::array{true, false, true}, std::array{true, true, true}, std::array{false, true, true},
        std::array{false, false, true}}) {
    const std::optional<Row> x = solve(rows, free);
    if (!x || (*x)[0] < 0 || (*x)[1] < 0 || !((*x)[2] > 0)) continue;
    const double residual = squared_residual(rows, *x);
    if (!best || residual < best_residual * (1 - 1e-9)) {
      best = x;
      best_residual = residual;
    }
  }
  if (!best || !two_sizes) {
    throw std::invalid_argument(
        "the measured collectives cannot determine a bandwidth: measure at least two message "
        "sizes whose times grow with size");
  }
  LinkFit fit;
  fit.base = Duration::from_seconds((*best)[0]);
  fit.hop = Duration::from_seconds((*best)[1]);
  fit.bandwidth = Bandwidth::bytes_per_s(1 / (*best)[2]);
  std::vector<double> moving;
  std::vector<double> reducing;
  for (const CollectiveMeasurement& c : links.collectives) {
    for (const CollectivePoint& p : c.points) {
      if (!(p.stats.median_s > 0)) continue;
      (is_reducing(c.op) ? reducing : moving)
          .push_back(
              std::abs(predicted_seconds(fit, c.op, links.ranks, p.bytes) / p.stats.median_s - 1));
    }
  }
  fit.median_error = stats_of(moving).median_s;  // order statistics of any values
  fit.worst_error = *std::max_element(moving.begin(), moving.end());
  if (!reducing.empty()) fit.reducing_median_error = stats_of(reducing).median_s;
  return fit;
}

}  // namespace dtsim::calibration
