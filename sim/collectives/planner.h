// Collective planning: from (operation, algorithm, group layout, size) to a CollectivePlan,
// plus the closed-form alpha-beta estimates that resolve CollectiveAlgorithm::kAuto.
#pragma once

#include <string>
#include <vector>

#include "sim/collectives/collective_plan.h"
#include "sim/collectives/nccl_group.h"
#include "sim/collectives/protocol.h"
#include "sim/units.h"

namespace dtsim {

// Plans `op` over `layout` with `algorithm`. `bytes` follows nccl-tests' "size" (see
// CollectivePlan::bytes); a group of one rank or bytes == 0 gives a plan with no phases.
// Throws std::invalid_argument with a clear sentence when the algorithm does not apply
// (the text of applicability_error), when algorithm is kAuto (resolve it with
// choose_algorithm first) or when bytes is negative.
CollectivePlan plan_collective(CollectiveOp op, CollectiveAlgorithm algorithm,
                               const GroupLayout& layout, Bytes bytes,
                               const CollectiveOptions& options);

// The algorithms that exist for `op`, in tie-breaking order (never kAuto).
std::vector<CollectiveAlgorithm> algorithms_for(CollectiveOp op);

// "" when `algorithm` applies to `op` over `layout` with `options`, else the reason, e.g.
// "halving_doubling needs a power-of-two group, got 6 ranks". Also reports malformed
// layouts (node_of / region_of not one entry per member, repeated ranks) and options
// (root out of range, chunk_bytes not positive for pipelined algorithms).
std::string applicability_error(CollectiveOp op, CollectiveAlgorithm algorithm,
                                const GroupLayout& layout, const CollectiveOptions& options);

// Per-level alpha-beta figures of the topology the group sits on, measured by the caller.
struct AlphaBeta {
  Duration intra_node_alpha;
  Bandwidth intra_node_bw;
  Duration inter_node_alpha;
  Bandwidth inter_node_bw;
  Duration inter_region_alpha;
  Bandwidth inter_region_bw;
  // The collective library's protocols; their cost is added once to every estimate (see
  // choose_protocol). All unused by default: transfers alone.
  ProtocolTable protocols{};
  // NCCL's view of the group: where it runs NCCL, `auto` picks the algorithm and the
  // protocol as NCCL's own tuning model does (sim/collectives/nccl_tuning.h).
  NcclGroup nccl{};
};

// The latency part of a protocol for one call: `base` plus the steps of the hops one piece
// crosses: a ring's p-1 (2(p-1) for all-reduce; with members in node order, nodes-1 of them
// network hops), a tree's deepest leaf-to-root path (there and back for all-reduce),
// halving/doubling's log2 p partners (twice for all-reduce), a two-level algorithm's intra
// and inter rings (twice each for all-reduce), one hop of the slowest kind for direct.
// NVLS pays NCCL's NVLS latency (nccl_nvls_latency) instead of hops.
// Pipelined algorithms pay the hops once, not per chunk. Zero for a group of one or zero
// bytes. The layout must be valid for `algorithm` (see applicability_error).
Duration protocol_latency(CollectiveOp op, CollectiveAlgorithm algorithm,
                          const GroupLayout& layout, Bytes bytes,
                          const CollectiveOptions& options, const ProtocolCosts& costs);

// The protocol a call uses and what it adds to its transfers: of the protocols in use, the
// least protocol_latency + bandwidth_time x (1 / bandwidth_fraction - 1), where
// bandwidth_time is the time its bytes take at the links' full rate (estimate_bandwidth_time),
// as NCCL picks. Small calls take the low-latency protocols, large ones the full-bandwidth
// one. No protocol in use: Simple, nothing added.
struct ProtocolChoice {
  CollectiveProtocol protocol = CollectiveProtocol::kSimple;
  Duration cost = Duration::zero();
};
ProtocolChoice choose_protocol(CollectiveOp op, CollectiveAlgorithm algorithm,
                               const GroupLayout& layout, Bytes bytes,
                               const CollectiveOptions& options, const ProtocolTable& protocols,
                               Duration bandwidth_time);

// Closed-form (uncontended alpha-beta) time of a plan shape; used by auto and by tests.
// A transfer between members of one node uses the intra-node figures, of one region the
// inter-node ones, otherwise the inter-region ones. A step costs, for the slowest level
// present among its transfers, alpha + (bytes the busiest rank sends or receives at that
// level) / bandwidth: a rank's concurrent transfers share its link, which is what keeps a
// double binary tree (up to 4 chunks per rank per step) from looking 4x faster than a ring.
// A tree charges every step at the full-pipeline rate (an upper bound on its fill and
// drain steps); a chain (ring broadcast/reduce) costs the first chunk's trip over every hop
// plus c-1 chunks through its slowest hop; ab.protocols add choose_protocol's cost. Throws
// std::invalid_argument like plan_collective, and when a level the group uses has a
// bandwidth that is not positive.
Duration estimate_time(CollectiveOp op, CollectiveAlgorithm algorithm, const GroupLayout& layout,
                       Bytes bytes, const CollectiveOptions& options, const AlphaBeta& ab);

// estimate_time without the protocols' cost: the transfers alone; and their bandwidth part
// alone (every alpha zero).
Duration estimate_transfer_time(CollectiveOp op, CollectiveAlgorithm algorithm,
                                const GroupLayout& layout, Bytes bytes,
                                const CollectiveOptions& options, const AlphaBeta& ab);
Duration estimate_bandwidth_time(CollectiveOp op, CollectiveAlgorithm algorithm,
                                 const GroupLayout& layout, Bytes bytes,
                                 const CollectiveOptions& options, const AlphaBeta& ab);

// What the collective library's protocol adds to one call of this shape on these links,
// judged on the call's bandwidth time (estimate_bandwidth_time): on a group that runs NCCL,
// the cost of the protocol NCCL's tuning model picks for the algorithm (nccl_choice), and
// for NVLS its efficiency (nccl_nvls_efficiency) as a bandwidth fraction; elsewhere
// choose_protocol's.
Duration protocol_cost(CollectiveOp op, CollectiveAlgorithm algorithm, const GroupLayout& layout,
                       Bytes bytes, const CollectiveOptions& options, const AlphaBeta& ab);

// kAuto resolves, on a group that runs NCCL (ab.nccl), to the algorithm NCCL's tuning model
// picks (nccl_choice); elsewhere to the applicable algorithm with the smallest
// estimate_time (ties: the order of algorithms_for). Throws std::invalid_argument when none
// applies.
CollectiveAlgorithm choose_algorithm(CollectiveOp op, const GroupLayout& layout, Bytes bytes,
                                     const CollectiveOptions& options, const AlphaBeta& ab);

}  // namespace dtsim
