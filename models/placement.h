// Placement: which cluster rank holds each coordinate (dp, pp, tp, cp) of a plan, and the
// rank groups along each axis.
#pragma once

#include <array>
#include <vector>

#include "models/parallel_plan.h"

namespace dtsim::models {

struct RankCoords {
  int dp = 0;
  int pp = 0;
  int tp = 0;
  int cp = 0;
  int& operator[](ParallelAxis a);
  int operator[](ParallelAxis a) const;
};

class Placement {
 public:
  // Sizes of the four axes; `order` innermost first (a permutation of the four axes);
  // `rank_map` empty or a permutation of 0 .. product - 1. Throws std::invalid_argument.
  Placement(int dp, int pp, int tp, int cp, std::vector<ParallelAxis> order,
            std::vector<int> rank_map);

  int size() const { return static_cast<int>(to_rank_.size()); }
  int size(ParallelAxis a) const { return sizes_[static_cast<size_t>(a)]; }
  int rank(const RankCoords& c) const;
  const RankCoords& coords(int rank) const { return coords_[rank]; }
  // The ranks that share every coordinate of `c` but `axis`, in axis order.
  std::vector<int> group(ParallelAxis axis, const RankCoords& c) const;
  // The ranks that share every coordinate of `c` except those in `axes`, in position order.
  std::vector<int> group(std::initializer_list<ParallelAxis> axes, const RankCoords& c) const;
  // Expert parallelism carves groups of `ep` consecutive data-parallel replicas out of the
  // data-parallel axis (Megatron-LM): the rank's expert-parallel group, and the replicas
  // that hold the same experts as it (its expert-data-parallel group), in replica order.
  std::vector<int> expert_group(const RankCoords& c, int ep) const;
  std::vector<int> expert_data_group(const RankCoords& c, int ep) const;

 private:
  int position(const RankCoords& c) const;
  std::array<int, 4> sizes_{};
  std::vector<ParallelAxis> order_;
  std::vector<int> to_rank_;
  std::vector<RankCoords> coords_;  // by cluster rank
};

}  // namespace dtsim::models
