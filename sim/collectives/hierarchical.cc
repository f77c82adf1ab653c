// Hierarchical (two-level) ring collectives, as in Horovod's hierarchical all-reduce and
// NCCL's intra/inter split: ring reduce-scatter inside every group, ring all-reduce across
// groups among members with the same local index, ring all-gather inside every group.
// Groups are nodes (hierarchical) or regions (cross_region); torus2d reuses the shape.
#include "sim/collectives/plan_util.h"

namespace dtsim::collective_detail {

namespace {

Phase ring_phase(const std::vector<std::vector<int>>& rings, const std::vector<int>& members,
                 Bytes bytes, int64_t repeat) {
  Phase phase;
  add_ring_step(rings, members, bytes, phase.transfers);
  phase.repeat = repeat;
  return phase;
}

}  // namespace

// With N groups of g members (p = gN): the intra-group steps move pieces of ceil(n/g), the
// inter-group steps pieces of ceil(n/g/N) = ceil(n/p) (padded when not divisible). All
// groups' rings run concurrently in the same phases.
//   all_reduce:     intra RS (g-1 steps), inter AR (2(N-1)), intra AG (g-1).
//   reduce_scatter: intra RS (g-1), inter RS (N-1): every member ends with n/p reduced.
//   all_gather:     inter AG (N-1), intra AG (g-1): the mirror image.
// The intra steps come first in reduce-scatter (and last in all-gather) so that the slow
// inter-group links carry 1/g of the data. One group (N = 1) or one member per group (g = 1)
// leaves a plain ring; append_phase then merges RS and AG into the ring's single phase.
void plan_two_level(CollectivePlan& plan, const TwoLevelRings& rings) {
  const int64_t groups = static_cast<int64_t>(rings.intra.size());
  const int64_t g = static_cast<int64_t>(rings.intra.front().size());
  const Bytes intra_piece = piece_of(plan.bytes, g);
  const Bytes inter_piece = piece_of(plan.bytes, g * groups);
  const auto intra = [&](int64_t repeat) {
    append_phase(plan, ring_phase(rings.intra, plan.members, intra_piece, repeat));
  };
  const auto inter = [&](int64_t repeat) {
    append_phase(plan, ring_phase(rings.inter, plan.members, inter_piece, repeat));
  };
  switch (plan.op) {
    case CollectiveOp::kAllReduce:
      intra(g - 1);
      inter(2 * (groups - 1));
      intra(g - 1);
      break;
    case CollectiveOp::kReduceScatter:
      intra(g - 1);
      inter(groups - 1);
      break;
    case CollectiveOp::kAllGather:
      inter(groups - 1);
      intra(g - 1);
      break;
    default:
      break;  // not a two-level operation; the dispatcher never gets here
  }
}

void plan_hierarchical(CollectivePlan& plan, const std::vector<int>& group_key) {
  plan_two_level(plan, two_level_rings(group_by(group_key)));
}

}  // namespace dtsim::collective_detail
