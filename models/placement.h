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
  // The first rank of group(axes, c), without building it: the group's name among the
  // groups along those axes.
  int leader(std::initializer_list<ParallelAxis> axes, const RankCoords& c) const;
  // The expert layers' groups, as Megatron-Core's expert rank generator lays them out
  // (parallel_state.py, MoE parallel folding): the tp x cp x dp ranks of a pipeline stage,
  // numbered tensor-parallel index first, then context, then data, are regrouped as
  // etp x ep x edp in that order. The rank's expert-tensor-parallel group (the ranks that
  // split its experts' weights) and its expert-parallel group (the ranks its tokens are
  // dispatched over, each holding 1/ep of the experts), in index order. With etp = tp and
  // cp = 1 the expert-parallel group is ep consecutive data-parallel replicas.
  struct ExpertGroups {
    std::vector<int> tensor, expert;
  };
  ExpertGroups expert_groups(const RankCoords& c, int etp, int ep) const;
  // Its expert-data-parallel group: the ranks holding the same expert shards, one per
  // etp x ep block of the stage (as many as the stage has blocks: apart from the groups
  // above, which are small, so that a caller builds it only where it is used).
  std::vector<int> expert_data_group(const RankCoords& c, int etp, int ep) const;
  // Its first rank, without building it.
  int expert_data_leader(const RankCoords& c, int etp, int ep) const;

 private:
  int position(const RankCoords& c) const;
  // Megatron's flat index of a rank among its stage's ranks, and the rank at an index of
  // c's stage.
  int stage_index(const RankCoords& c) const;
  int at_stage_index(const RankCoords& c, int i) const;
  std::array<int, 4> sizes_{};
  std::vector<ParallelAxis> order_;
  std::vector<int> to_rank_;
  std::vector<RankCoords> coords_;  // by cluster rank
};

}  // namespace dtsim::models
