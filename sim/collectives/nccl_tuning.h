// NCCL's own cost model of a collective call (src/graph/tuning.cc ncclTopoTuneModel and
// ncclTopoGetAlgoTime, src/enqueue.cc topoGetAlgoInfo; NCCL 2.30.7): the latency and bus
// bandwidth it assumes for each algorithm and protocol, and the pair it runs a call with.
#pragma once

#include <optional>

#include "sim/collectives/planner.h"
#include "sim/collectives/protocol.h"
#include "sim/units.h"

namespace dtsim {

// The pair NCCL runs a call with, and the time its model gives it (not dtsim's estimate).
struct NcclChoice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  CollectiveProtocol protocol = CollectiveProtocol::kSimple;
  Duration model_time = Duration::zero();
};

// NCCL's predicted time for one call of `bytes` (nccl-tests' size) with `algorithm` and
// `protocol`, or nullopt where NCCL would not run that pair or dtsim does not model it:
// tree only for all-reduce, broadcast and reduce only on rings, NVLS only with Simple and
// only for all-reduce on one node whose NVSwitch reduces (layout.nvlink_sharp; NCCL also
// runs NVLS reduce-scatter and all-gather there, which are not modelled), LL128 only where
// every member has it (ab.protocols) and their architectures match or are Hopper and later.
// The bus bandwidth is the one NCCL's search finds: on one node the group's NVLink path
// (ab), which for A100 and H100 nodes is NCCL's own 240 and 360 GB/s; across nodes the
// members' NICs (all of a node's where each member has one). Approximations: an Intel
// host (NCCL's LL cap and network overhead depend on the CPU); the ring's search channels
// stand for the tree's; broadcast and reduce pay every step's latency (NCCL pays one when
// its channels share one ring); the 0.85 of NCCL's fallback tree pattern is left out.
// Negative sizes: nullopt.
std::optional<Duration> nccl_model_time(CollectiveOp op, CollectiveAlgorithm algorithm,
                                        CollectiveProtocol protocol, const GroupLayout& layout,
                                        Bytes bytes, const AlphaBeta& ab);

// The pair with the least nccl_model_time, scanning algorithms and then protocols in NCCL's
// index order (tree, ring, NVLS; LL, LL128, Simple), ties to the first; only `algorithm`
// when it is given. Requires ab.nccl.runs_nccl() and an op NCCL tunes (not all-to-all or
// send/recv, which it runs as point-to-point transfers). Throws std::invalid_argument when
// no pair applies.
NcclChoice nccl_choice(CollectiveOp op, const GroupLayout& layout, Bytes bytes, const AlphaBeta& ab,
                       std::optional<CollectiveAlgorithm> algorithm = std::nullopt);

// Whether NCCL's tuner picks the algorithm of `op` (all but all-to-all and send/recv).
bool nccl_tunes(CollectiveOp op);

// NVLS on one node: its latency (hwLat[NVLINK][NVLS][SIMPLE], 25 us), and the fraction of
// the links' rate its switch-side reduction reaches (nvlsEfficiency: Hopper 0.85,
// Blackwell 0.74; none before Hopper).
Duration nccl_nvls_latency();
double nccl_nvls_efficiency(int compute_capability);

namespace nccl_detail {
// baseLatencies[algo][proto] and hwLatencies[hw][algo][proto], us (ncclTunerConstantsDefaults):
// algorithms tree, ring, NVLS; hardware NVLink, PCIe, network; protocols LL, LL128, Simple.
inline constexpr int kRing = 1, kNvlink = 0, kPci = 1, kNet = 2;
inline constexpr double kBaseLat[3][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}};
inline constexpr double kHwLat[3][3][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}},    // NVLink: tree, ring, NVLS
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}},      // PCIe
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}, {0, 0, 18}}};  // network

constexpr ProtocolCosts ring_costs(int intra, size_t p, double fraction) {
  return ProtocolCosts{Duration::ns(static_cast<int64_t>(kBaseLat[kRing][p] * 1000)),
                       Duration::ns(static_cast<int64_t>(kHwLat[intra][kRing][p] * 1000)),
                       Duration::ns(static_cast<int64_t>(kHwLat[kNet][kRing][p] * 1000)),
                       fraction};
}
}  // namespace nccl_detail

// The ring's costs per protocol as NCCL's model has them (baseLat, hwLat[RING] for an
// NVLink or PCIe step and a network step, and the bus bandwidth factor of LL 0.5 and LL128
// 0.92), LL128 where `ll128`: the device catalog's collective_protocols for GPUs. constexpr,
// so that the catalog's figures are constants, not initialized at start-up.
constexpr ProtocolTable nccl_ring_protocols(bool nvlink, bool ll128) {
  const int intra = nvlink ? nccl_detail::kNvlink : nccl_detail::kPci;
  return ProtocolTable{nccl_detail::ring_costs(intra, 0, 0.5),
                       ll128 ? nccl_detail::ring_costs(intra, 1, 0.92) : ProtocolCosts{},
                       nccl_detail::ring_costs(intra, 2, 1.0)};
}

}  // namespace dtsim
