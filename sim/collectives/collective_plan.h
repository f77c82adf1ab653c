// What a collective planner produces: phases of point-to-point transfers between ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.h"

namespace dtsim {

enum class CollectiveOp {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,
};

enum class CollectiveAlgorithm {
  kAuto,             // chosen by size and topology (see choose_algorithm)
  kRing,             // bandwidth-optimal ring
  kTree,             // NCCL-style double binary tree, pipelined in chunks
  kHalvingDoubling,  // recursive halving (reduce-scatter) and doubling (all-gather)
  kHierarchical,     // intra-node phase, inter-node phase, intra-node phase
  kTorus2D,          // Mikami et al. 2018: RS along X, AR along Y, AG along X
  kCrossRegion,      // RS inside each region, AR across regions, AG inside each region
  kDirect,           // every pair exchanges directly (all-to-all, send/recv)
  kNvls,             // NVLink SHARP: the node's NVSwitch reduces and multicasts
};
inline constexpr CollectiveAlgorithm kAllCollectiveAlgorithms[] = {
    CollectiveAlgorithm::kAuto,         CollectiveAlgorithm::kRing,
    CollectiveAlgorithm::kTree,         CollectiveAlgorithm::kHalvingDoubling,
    CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kTorus2D,
    CollectiveAlgorithm::kCrossRegion,  CollectiveAlgorithm::kDirect,
    CollectiveAlgorithm::kNvls};

// How a reducing collective combines its members' elements (NCCL's ncclRedOp_t).
enum class ReduceOp : uint8_t { kSum, kAvg, kMax, kMin };
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                                             ReduceOp::kMin};
std::string_view reduce_op_name(ReduceOp r);
std::optional<ReduceOp> reduce_op_from_name(std::string_view name);
// All-reduce, reduce-scatter and reduce combine elements; the others move them.
constexpr bool is_reducing(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter ||
         op == CollectiveOp::kReduce;
}

std::string_view collective_op_name(CollectiveOp op);
std::optional<CollectiveOp> collective_op_from_name(std::string_view name);
std::string_view algorithm_name(CollectiveAlgorithm a);
std::optional<CollectiveAlgorithm> algorithm_from_name(std::string_view name);
std::string_view algorithm_description(CollectiveAlgorithm a);

// One point-to-point transfer, between global ranks.
struct Transfer {
  int src = 0;
  int dst = 0;
  Bytes bytes;
};

// Transfers that start together; the phase ends when the last one has arrived. A phase
// with repeat = k stands for k identical phases back to back (a ring's 2(p-1) steps), so
// that plans stay small at 16,384 ranks and the network model can fast-forward them.
struct Phase {
  std::vector<Transfer> transfers;
  int64_t repeat = 1;
};

// Where each member of a group sits, which is all a planner needs of the topology.
// members[i] is a global rank; node_of[i] and region_of[i] describe members[i].
struct GroupLayout {
  std::vector<int> members;
  std::vector<int> node_of;
  std::vector<int> region_of;
  // The members share one node's NVSwitch, which reduces and multicasts (NVLink SHARP:
  // third-generation NVSwitch, Hopper GPUs and later).
  bool nvlink_sharp = false;
  // Every member reaches the network through a NIC of its own (a rail per GPU, as on
  // DGX/HGX nodes), so rings that leave a node from different members use different NICs.
  bool nic_per_member = false;
};

struct CollectiveOptions {
  // Pipelined algorithms (tree, broadcast, reduce) split messages into chunks of at most
  // this size.
  Bytes chunk_bytes = MiB(4);
  // Logical grid for kTorus2D, X * Y = group size. {0, 0} means X = ranks per node,
  // Y = number of nodes.
  int torus_x = 0;
  int torus_y = 0;
  // For broadcast and reduce: index into members of the root.
  int root = 0;
  // For send/recv: the members exchange in pairs (0->1, 2->3, ...).
};

struct CollectivePlan {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  std::vector<int> members;
  // nccl-tests' "size": the per-rank buffer of the operation (for all-gather the output,
  // for reduce-scatter the input, for all-to-all the send buffer).
  Bytes bytes;
  std::vector<Phase> phases;
};

}  // namespace dtsim
