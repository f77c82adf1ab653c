// Direct exchanges: all-to-all as one phase in which every ordered pair exchanges its
// block (the pattern of NCCL's and MPI's pairwise all-to-all, all at once), and paired
// send/recv.
#include <utility>

#include "sim/collectives/plan_util.h"

namespace dtsim::collective_detail {

// all_to_all: every member i sends ceil(n/p) (its block for j, padded when n is not
// divisible) to every j != i: p(p-1) transfers in one phase. send_recv: members 2k send n
// to members 2k+1, all pairs at once.
void plan_direct(CollectivePlan& plan) {
  const size_t p = plan.members.size();
  Phase phase;
  if (plan.op == CollectiveOp::kAllToAll) {
    const Bytes block = piece_of(plan.bytes, static_cast<int64_t>(p));
    phase.transfers.reserve(p * (p - 1));
    for (size_t i = 0; i < p; ++i) {
      for (size_t j = 0; j < p; ++j) {
        if (i != j) phase.transfers.push_back({plan.members[i], plan.members[j], block});
      }
    }
  } else if (plan.op == CollectiveOp::kSendRecv) {
    for (size_t i = 0; i + 1 < p; i += 2) {
      phase.transfers.push_back({plan.members[i], plan.members[i + 1], plan.bytes});
    }
  }
  append_phase(plan, std::move(phase));
}

}  // namespace dtsim::collective_detail
