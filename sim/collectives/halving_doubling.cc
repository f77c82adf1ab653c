// Recursive halving / doubling (Thakur, Rabenseifner & Gropp 2005; Rabenseifner's
// all-reduce): log2 p steps of reduce-scatter, then log2 p steps of all-gather.
#include <utility>

#include "sim/collectives/plan_util.h"

namespace dtsim::collective_detail {

namespace {

// Every member i exchanges `pieces` pieces with member i XOR distance.
void add_exchange(CollectivePlan& plan, int distance, int64_t pieces, Bytes piece) {
  Phase phase;
  const int p = static_cast<int>(plan.members.size());
  for (int i = 0; i < p; ++i) {
    phase.transfers.push_back({plan.members[static_cast<size_t>(i)],
                               plan.members[static_cast<size_t>(i ^ distance)],
                               Bytes(piece.count() * pieces)});
  }
  append_phase(plan, std::move(phase));
}

}  // namespace

// The buffer is p pieces of ceil(n/p) bytes (padded when n is not divisible). Reduce-scatter
// step k pairs i with i XOR (p >> (k+1)) and sends the half of the current range that the
// partner keeps: n / 2^(k+1). All-gather retraces the steps in reverse, doubling the range.
// In an all-reduce the last halving and the first doubling step are the same exchange (one
// piece with i XOR 1), so they merge into one phase with repeat 2.
void plan_halving_doubling(CollectivePlan& plan) {
  const int p = static_cast<int>(plan.members.size());
  const Bytes piece = piece_of(plan.bytes, p);
  const bool scatter =
      plan.op == CollectiveOp::kAllReduce || plan.op == CollectiveOp::kReduceScatter;
  const bool gather = plan.op == CollectiveOp::kAllReduce || plan.op == CollectiveOp::kAllGather;
  if (scatter) {
    for (int d = p / 2; d >= 1; d /= 2) add_exchange(plan, d, d, piece);
  }
  if (gather) {
    for (int d = 1; d < p; d *= 2) add_exchange(plan, d, d, piece);
  }
}

}  // namespace dtsim::collective_detail
