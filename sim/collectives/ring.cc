// Ring collectives (Patarasuk & Yuan 2009, bandwidth-optimal all-reduce): p-1 steps of
// reduce-scatter and/or p-1 of all-gather, n/p per step; broadcast/reduce as a pipelined
// chain from/to the root.
#include <algorithm>
#include <utility>

#include "sim/collectives/plan_util.h"

namespace dtsim::collective_detail {

namespace {

// Pipelined chain members[root], members[root+1], ... (p-1 hops). The message is cut into
// c = ceil(n / chunk_bytes) chunks of ceil(n / c) bytes (the last one padded). Broadcast:
// hop k (k-th from the root) carries chunk t-k at step t. Reduce runs the other way, so
// the hop farthest from the root starts: hop k carries chunk t-(p-2-k) toward the root.
// Either way every chunk crosses p-1 hops, one per step: (p-1) + c-1 steps in all.
void plan_chain(CollectivePlan& plan, const CollectiveOptions& options) {
  const int64_t p = static_cast<int64_t>(plan.members.size());
  const int64_t hops = p - 1;
  const int64_t chunks = ceil_div(plan.bytes.count(), options.chunk_bytes.count());
  const Bytes chunk = piece_of(plan.bytes, chunks);
  const bool reduce = plan.op == CollectiveOp::kReduce;
  const auto at = [&](int64_t k) {
    return plan.members[static_cast<size_t>((options.root + k) % p)];
  };
  const int64_t steps = hops + chunks - 1;
  for (int64_t t = 0; t < steps; ++t) {
    Phase phase;
    // Hop k is busy while its chunk index (t - distance-from-start) lies in [0, chunks).
    const int64_t first = std::max<int64_t>(0, t - chunks + 1);
    const int64_t last = std::min(t, hops - 1);
    for (int64_t i = first; i <= last; ++i) {
      const int64_t k = reduce ? hops - 1 - i : i;
      phase.transfers.push_back(reduce ? Transfer{at(k + 1), at(k), chunk}
                                       : Transfer{at(k), at(k + 1), chunk});
    }
    // Steps hops-1 .. chunks-1 keep every hop busy and are identical: emit them at once.
    if (t == hops - 1 && chunks - 1 >= t) {
      phase.repeat = chunks - t;
      t = chunks - 1;
    }
    append_phase(plan, std::move(phase));
  }
}

}  // namespace

void plan_ring(CollectivePlan& plan, const GroupLayout& layout, const CollectiveOptions& options) {
  const int64_t p = static_cast<int64_t>(plan.members.size());
  Phase step;
  // Reduce-scatter and all-gather steps have the same shape: on each of the c rings
  // (channel_rings), every member sends one piece of ceil(n/(p c)) bytes to the next; only
  // the piece (and reduce vs copy) differs.
  if (plan.op == CollectiveOp::kAllReduce || plan.op == CollectiveOp::kReduceScatter ||
      plan.op == CollectiveOp::kAllGather) {
    const std::vector<std::vector<int>> rings = channel_rings(layout);
    add_ring_step(rings, plan.members, piece_of(plan.bytes, p * static_cast<int64_t>(rings.size())),
                  step.transfers);
  }
  switch (plan.op) {
    case CollectiveOp::kAllReduce:
      step.repeat = 2 * (p - 1);
      break;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
      step.repeat = p - 1;
      break;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
      plan_chain(plan, options);
      return;
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kSendRecv:
      return;  // not a ring operation; the dispatcher never gets here
  }
  append_phase(plan, std::move(step));
}

}  // namespace dtsim::collective_detail
