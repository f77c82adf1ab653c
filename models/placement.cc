// Placement of plan coordinates onto cluster ranks.
#include "models/placement.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dtsim::models {

std::string_view parallel_axis_name(ParallelAxis a) {
  switch (a) {
    case ParallelAxis::kTp: return "tp";
    case ParallelAxis::kCp: return "cp";
    case ParallelAxis::kDp: return "dp";
    case ParallelAxis::kPp: return "pp";
  }
  return "?";
}

int& RankCoords::operator[](ParallelAxis a) {
  switch (a) {
    case ParallelAxis::kTp: return tp;
    case ParallelAxis::kCp: return cp;
    case ParallelAxis::kDp: return dp;
    case ParallelAxis::kPp: return pp;
  }
  return tp;
}

int RankCoords::operator[](ParallelAxis a) const { return const_cast<RankCoords&>(*this)[a]; }

Placement::Placement(int dp, int pp, int tp, int cp, std::vector<ParallelAxis> order,
                     std::vector<int> rank_map)
    : order_(std::move(order)) {
  sizes_[static_cast<size_t>(ParallelAxis::kTp)] = tp;
  sizes_[static_cast<size_t>(ParallelAxis::kCp)] = cp;
  sizes_[static_cast<size_t>(ParallelAxis::kDp)] = dp;
  sizes_[static_cast<size_t>(ParallelAxis::kPp)] = pp;
  std::vector<ParallelAxis> sorted = order_;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != std::vector{ParallelAxis::kTp, ParallelAxis::kCp, ParallelAxis::kDp,
                            ParallelAxis::kPp}) {
    throw std::invalid_argument("the axis order must name tp, cp, dp and pp once each");
  }
  const int n = dp * pp * tp * cp;
  if (rank_map.empty()) {
    rank_map.resize(n);
    for (int i = 0; i < n; ++i) rank_map[i] = i;
  }
  if (static_cast<int>(rank_map.size()) != n) {
    throw std::invalid_argument("the rank map has " + std::to_string(rank_map.size()) +
                                " entries, expected one per rank (" + std::to_string(n) + ")");
  }
  std::vector<bool> seen(n, false);
  for (int r : rank_map) {
    if (r < 0 || r >= n || seen[r]) {
      throw std::invalid_argument("the rank map must hold each rank 0.." + std::to_string(n - 1) +
                                  " exactly once (" + std::to_string(r) + " is " +
                                  (r < 0 || r >= n ? "out of range" : "repeated") + ")");
    }
    seen[r] = true;
  }
  to_rank_ = std::move(rank_map);
  coords_.resize(n);
  for (int pos = 0; pos < n; ++pos) {
    RankCoords c;
    int rest = pos;
    for (ParallelAxis a : order_) {
      c[a] = rest % size(a);
      rest /= size(a);
    }
    coords_[to_rank_[pos]] = c;
  }
}

int Placement::position(const RankCoords& c) const {
  int pos = 0;
  int stride = 1;
  for (ParallelAxis a : order_) {
    pos += c[a] * stride;
    stride *= size(a);
  }
  return pos;
}

int Placement::rank(const RankCoords& c) const { return to_rank_[position(c)]; }

int Placement::stage_index(const RankCoords& c) const {
  const int tp = size(ParallelAxis::kTp), cp = size(ParallelAxis::kCp);
  return c.tp + tp * (c.cp + cp * c.dp);
}

int Placement::at_stage_index(const RankCoords& c, int i) const {
  const int tp = size(ParallelAxis::kTp), cp = size(ParallelAxis::kCp);
  RankCoords x = c;
  x.tp = i % tp;
  x.cp = i / tp % cp;
  x.dp = i / (tp * cp);
  return rank(x);
}

Placement::ExpertGroups Placement::expert_groups(const RankCoords& c, int etp, int ep) const {
  const int index = stage_index(c);
  const int tensor_base = index - index % etp;
  const int expert_base = index - index % (etp * ep) + index % etp;
  ExpertGroups out;
  for (int t = 0; t < etp; ++t) out.tensor.push_back(at_stage_index(c, tensor_base + t));
  for (int k = 0; k < ep; ++k) out.expert.push_back(at_stage_index(c, expert_base + k * etp));
  return out;
}

int Placement::leader(std::initializer_list<ParallelAxis> axes, const RankCoords& c) const {
  RankCoords first = c;
  for (ParallelAxis a : axes) first[a] = 0;
  return rank(first);
}

int Placement::expert_data_leader(const RankCoords& c, int etp, int ep) const {
  return at_stage_index(c, stage_index(c) % (etp * ep));
}

std::vector<int> Placement::expert_data_group(const RankCoords& c, int etp, int ep) const {
  const int stage_ranks =
      size(ParallelAxis::kTp) * size(ParallelAxis::kCp) * size(ParallelAxis::kDp);
  const int block = etp * ep;  // one copy of every expert shard
  std::vector<int> out;
  for (int i = stage_index(c) % block; i < stage_ranks; i += block) {
    out.push_back(at_stage_index(c, i));
  }
  return out;
}

std::vector<int> Placement::group(ParallelAxis axis, const RankCoords& c) const {
  return group({axis}, c);
}

std::vector<int> Placement::group(std::initializer_list<ParallelAxis> axes,
                                  const RankCoords& c) const {
  // Enumerate the free axes in placement order so that groups list ranks consistently.
  std::vector<ParallelAxis> free;
  for (ParallelAxis a : order_) {
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) free.push_back(a);
  }
  int count = 1;
  for (ParallelAxis a : free) count *= size(a);
  std::vector<int> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    RankCoords x = c;
    int rest = i;
    for (ParallelAxis a : free) {
      x[a] = rest % size(a);
      rest /= size(a);
    }
    out.push_back(rank(x));
  }
  return out;
}

}  // namespace dtsim::models
