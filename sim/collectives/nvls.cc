// NVLink SHARP all-reduce (NCCL's NVLS algorithm on one node), as the traffic on each GPU's
// link to the NVSwitch.
#include <utility>

#include "sim/collectives/plan_util.h"

namespace dtsim::collective_detail {

// Each GPU reduces its 1/p slice with multimem loads (the switch reads that slice from
// every GPU, so a GPU's uplink carries n, and returns the sum, n/p on its downlink) and
// stores it with multimem stores (n/p up; the switch writes every slice to every GPU, n
// down): n + n/p each way. A rank-to-rank plan cannot name the switch as a party, so one
// phase of transfers member i -> i+1 of n + ceil(n/p) puts exactly that traffic on every
// uplink and downlink of the NVSwitch node, where every pair of GPUs meets in the switch.
void plan_nvls(CollectivePlan& plan) {
  const Bytes each = nvls_bytes_each_way(plan.bytes, static_cast<int64_t>(plan.members.size()));
  Phase phase;
  phase.transfers.reserve(plan.members.size());
  for (size_t i = 0; i < plan.members.size(); ++i) {
    phase.transfers.push_back({plan.members[i], plan.members[(i + 1) % plan.members.size()], each});
  }
  append_phase(plan, std::move(phase));
}

}  // namespace dtsim::collective_detail
