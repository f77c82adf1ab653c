// Names (as used in scenario files and reports) and one-line descriptions of collective
// operations, algorithms and protocols.
#include <array>
#include <utility>

#include "sim/collectives/collective_plan.h"
#include "sim/collectives/protocol.h"

namespace dtsim {

namespace {

constexpr std::array<std::pair<CollectiveOp, std::string_view>, 7> kOpNames{{
    {CollectiveOp::kAllReduce, "all_reduce"},
    {CollectiveOp::kReduceScatter, "reduce_scatter"},
    {CollectiveOp::kAllGather, "all_gather"},
    {CollectiveOp::kBroadcast, "broadcast"},
    {CollectiveOp::kReduce, "reduce"},
    {CollectiveOp::kAllToAll, "all_to_all"},
    {CollectiveOp::kSendRecv, "send_recv"},
}};

struct AlgorithmInfo {
  CollectiveAlgorithm algorithm;
  std::string_view name;
  std::string_view description;
};

constexpr std::array<AlgorithmInfo, 9> kAlgorithms{{
    {CollectiveAlgorithm::kAuto, "auto",
     "NCCL's own choice where the group runs NCCL (its tuning model: ring, tree or NVLS); "
     "elsewhere the applicable algorithm with the smallest alpha-beta estimate"},
    {CollectiveAlgorithm::kRing, "ring",
     "bandwidth-optimal ring: p-1 reduce-scatter and/or p-1 all-gather steps of n/p "
     "(Patarasuk & Yuan 2009); broadcast/reduce as a pipelined chain"},
    {CollectiveAlgorithm::kTree, "tree",
     "NCCL's pipelined double binary tree, each tree carrying half the data (Sanders, Speck & "
     "Traff 2009); broadcast/reduce over one tree"},
    {CollectiveAlgorithm::kHalvingDoubling, "halving_doubling",
     "recursive halving reduce-scatter and recursive doubling all-gather, log2 p steps each "
     "(Thakur, Rabenseifner & Gropp 2005); power-of-two groups"},
    {CollectiveAlgorithm::kHierarchical, "hierarchical",
     "ring reduce-scatter inside each node, ring all-reduce across nodes on n/g, ring "
     "all-gather inside each node"},
    {CollectiveAlgorithm::kTorus2D, "torus2d",
     "2D torus all-reduce on an X*Y grid: reduce-scatter along X, all-reduce along Y, "
     "all-gather along X (Mikami et al. 2018)"},
    {CollectiveAlgorithm::kCrossRegion, "cross_region",
     "reduce-scatter inside each region, all-reduce across regions on n/g, all-gather inside "
     "each region, so the WAN carries 1/g of the data"},
    {CollectiveAlgorithm::kDirect, "direct",
     "every pair exchanges directly in one step (all-to-all, paired send/recv)"},
    {CollectiveAlgorithm::kNvls, "nvls",
     "NVLink SHARP all-reduce on one node: the NVSwitch reduces each slice and multicasts "
     "the result, so a GPU's link carries n(1 + 1/p) each way instead of 2n(p-1)/p"},
}};

constexpr std::pair<ReduceOp, std::string_view> kReduceNames[] = {{ReduceOp::kSum, "sum"},
                                                                  {ReduceOp::kAvg, "avg"},
                                                                  {ReduceOp::kMax, "max"},
                                                                  {ReduceOp::kMin, "min"}};

}  // namespace

std::string_view reduce_op_name(ReduceOp r) {
  for (const auto& [o, name] : kReduceNames) {
    if (o == r) return name;
  }
  return "unknown";
}

std::optional<ReduceOp> reduce_op_from_name(std::string_view name) {
  for (const auto& [o, n] : kReduceNames) {
    if (n == name) return o;
  }
  return std::nullopt;
}

std::string_view collective_op_name(CollectiveOp op) {
  for (const auto& [o, name] : kOpNames) {
    if (o == op) return name;
  }
  return "unknown";
}

std::optional<CollectiveOp> collective_op_from_name(std::string_view name) {
  for (const auto& [o, n] : kOpNames) {
    if (n == name) return o;
  }
  return std::nullopt;
}

std::string_view algorithm_name(CollectiveAlgorithm a) {
  for (const auto& info : kAlgorithms) {
    if (info.algorithm == a) return info.name;
  }
  return "unknown";
}

std::optional<CollectiveAlgorithm> algorithm_from_name(std::string_view name) {
  for (const auto& info : kAlgorithms) {
    if (info.name == name) return info.algorithm;
  }
  return std::nullopt;
}

std::string_view algorithm_description(CollectiveAlgorithm a) {
  for (const auto& info : kAlgorithms) {
    if (info.algorithm == a) return info.description;
  }
  return "unknown algorithm";
}

std::string_view collective_protocol_name(CollectiveProtocol p) {
  switch (p) {
    case CollectiveProtocol::kLL: return "LL";
    case CollectiveProtocol::kLL128: return "LL128";
    case CollectiveProtocol::kSimple: return "Simple";
  }
  return "?";
}

}  // namespace dtsim
