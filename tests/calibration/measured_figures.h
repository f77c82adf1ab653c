// Hand-made measurements for the measured models' tests: GEMM signatures, cost entries (one
// time, or a time beside co-runners and one alone), collective points and a measured
// two-rank all-reduce.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "calibration/cost_database.h"
#include "calibration/link_calibration.h"

namespace dtsim::calibration::figures {

inline OpSignature gemm(int64_t m, int64_t n, int64_t k) {
  OpSignature op;
  op.kind = KernelKind::kGemm;
  op.storage = op.math = DType::kFp32;
  op.gemm = {m, n, k, 1, false, true};
  op.flops = op.gemm.flops();
  return op;
}

inline CostEntry entry(const OpSignature& op, double seconds) {
  CostEntry e;
  e.op = op;
  e.samples_s = {seconds};
  e.stats = stats_of(e.samples_s);
  return e;
}

// Timed beside co-runners at `crowded_s` and alone at `alone_s`.
inline CostEntry beside(const OpSignature& op, double crowded_s, double alone_s) {
  CostEntry e = entry(op, crowded_s);
  e.alone_samples_s = {alone_s};
  e.alone = stats_of(e.alone_samples_s);
  return e;
}

// A collective's measured point: its samples and their statistics.
inline CollectivePoint point(Bytes bytes, std::vector<double> samples_s) {
  CollectivePoint p;
  p.bytes = bytes;
  p.samples_s = std::move(samples_s);
  p.stats = stats_of(p.samples_s);
  return p;
}

// An all-reduce over two ranks of one node, one sample per (bytes, seconds) point.
inline LinkCalibration two_rank_all_reduce(
    std::initializer_list<std::pair<int64_t, double>> points) {
  LinkCalibration l;
  l.ranks = 2;
  CollectiveMeasurement m;
  m.op = CollectiveOp::kAllReduce;
  for (const auto& [bytes, seconds] : points) m.points.push_back(point(Bytes(bytes), {seconds}));
  l.collectives.push_back(m);
  return l;
}

}  // namespace dtsim::calibration::figures
