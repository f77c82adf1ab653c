// Collective planner front end: which algorithms exist and apply, and dispatch to them.
#include "sim/collectives/planner.h"

#include <stdexcept>
#include <unordered_set>

#include "sim/collectives/plan_util.h"

namespace dtsim {

namespace {

using collective_detail::group_by;
using collective_detail::uneven_groups;

bool is_power_of_two(size_t p) { return p > 0 && (p & (p - 1)) == 0; }

std::string ranks(size_t p) { return std::to_string(p) + (p == 1 ? " rank" : " ranks"); }

std::string layout_error(const GroupLayout& layout) {
  const size_t p = layout.members.size();
  if (p == 0) return "a collective group needs at least one member";
  if (layout.node_of.size() != p || layout.region_of.size() != p) {
    return "the group layout lists " + std::to_string(p) + " members but " +
           std::to_string(layout.node_of.size()) + " node_of and " +
           std::to_string(layout.region_of.size()) + " region_of entries";
  }
  std::unordered_set<int> seen;
  for (int rank : layout.members) {
    if (rank < 0) return "rank " + std::to_string(rank) + " is not a valid rank";
    if (!seen.insert(rank).second)
      return "rank " + std::to_string(rank) + " appears twice in the group";
  }
  return "";
}

bool is_rooted(CollectiveOp op) {
  return op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce;
}

bool is_pipelined(CollectiveOp op, CollectiveAlgorithm a) {
  return a == CollectiveAlgorithm::kTree || (a == CollectiveAlgorithm::kRing && is_rooted(op));
}

std::string list_names(const std::vector<CollectiveAlgorithm>& algorithms) {
  std::string out;
  for (CollectiveAlgorithm a : algorithms) {
    if (!out.empty()) out += ", ";
    out += algorithm_name(a);
  }
  return out;
}

std::string shape_error(CollectiveOp op, CollectiveAlgorithm algorithm, const GroupLayout& layout,
                        const CollectiveOptions& options) {
  const size_t p = layout.members.size();
  switch (algorithm) {
    case CollectiveAlgorithm::kHalvingDoubling:
      if (!is_power_of_two(p))
        return "halving_doubling needs a power-of-two group, got " + ranks(p);
      return "";
    case CollectiveAlgorithm::kHierarchical: {
      const std::string uneven = uneven_groups(group_by(layout.node_of), layout.node_of, "node");
      if (!uneven.empty()) {
        return "hierarchical needs the same number of members on every node (" + uneven + ")";
      }
      return "";
    }
    case CollectiveAlgorithm::kCrossRegion: {
      const std::string uneven =
          uneven_groups(group_by(layout.region_of), layout.region_of, "region");
      if (!uneven.empty()) {
        return "cross_region needs the same number of members in every region (" + uneven + ")";
      }
      return "";
    }
    case CollectiveAlgorithm::kTorus2D:
      return collective_detail::torus_grid(layout, options).error;
    case CollectiveAlgorithm::kDirect:
      // One rank has nobody to pair with and nothing to send: an empty plan, not an error.
      if (op == CollectiveOp::kSendRecv && p > 1 && p % 2 != 0) {
        return "direct send_recv pairs members 0->1, 2->3, ... and needs an even group, got " +
               ranks(p);
      }
      return "";
    case CollectiveAlgorithm::kNvls:
      if (!layout.nvlink_sharp) {
        return "nvls needs the group on one node whose NVSwitch reduces (NVLink SHARP: "
               "an NVSwitch node of Hopper GPUs or later)";
      }
      return "";
    case CollectiveAlgorithm::kAuto:
    case CollectiveAlgorithm::kRing:
    case CollectiveAlgorithm::kTree:
      return "";
  }
  return "";
}

}  // namespace

std::vector<CollectiveAlgorithm> algorithms_for(CollectiveOp op) {
  using A = CollectiveAlgorithm;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return {A::kRing,        A::kTree, A::kHalvingDoubling, A::kHierarchical, A::kTorus2D,
              A::kCrossRegion, A::kNvls};
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
      return {A::kRing, A::kHalvingDoubling, A::kHierarchical, A::kCrossRegion};
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
      return {A::kRing, A::kTree};
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kSendRecv:
      return {A::kDirect};
  }
  return {};
}

std::string applicability_error(CollectiveOp op, CollectiveAlgorithm algorithm,
                                const GroupLayout& layout, const CollectiveOptions& options) {
  if (algorithm == CollectiveAlgorithm::kAuto) {
    return "auto is not a plan shape: resolve it with choose_algorithm first";
  }
  if (std::string error = layout_error(layout); !error.empty()) return error;
  const auto available = algorithms_for(op);
  bool exists = false;
  for (CollectiveAlgorithm a : available) exists = exists || a == algorithm;
  if (!exists) {
    return std::string(algorithm_name(algorithm)) + " does not implement " +
           std::string(collective_op_name(op)) + " (available: " + list_names(available) + ")";
  }
  const size_t p = layout.members.size();
  if (is_rooted(op) && (options.root < 0 || static_cast<size_t>(options.root) >= p)) {
    return std::string(collective_op_name(op)) + " root " + std::to_string(options.root) +
           " is not a member index of a group of " + ranks(p);
  }
  if (is_pipelined(op, algorithm) && options.chunk_bytes.count() <= 0) {
    return std::string(algorithm_name(algorithm)) + " " + std::string(collective_op_name(op)) +
           " is pipelined in chunks and needs chunk_bytes > 0, got " +
           std::to_string(options.chunk_bytes.count());
  }
  return shape_error(op, algorithm, layout, options);
}

CollectivePlan plan_collective(CollectiveOp op, CollectiveAlgorithm algorithm,
                               const GroupLayout& layout, Bytes bytes,
                               const CollectiveOptions& options) {
  if (std::string error = applicability_error(op, algorithm, layout, options); !error.empty()) {
    throw std::invalid_argument(error);
  }
  if (bytes.count() < 0) {
    throw std::invalid_argument("a collective cannot move a negative size (" +
                                std::to_string(bytes.count()) + " bytes)");
  }
  CollectivePlan plan;
  plan.op = op;
  plan.algorithm = algorithm;
  plan.members = layout.members;
  plan.bytes = bytes;
  if (layout.members.size() < 2 || bytes.count() == 0) return plan;
  switch (algorithm) {
    case CollectiveAlgorithm::kRing:
      collective_detail::plan_ring(plan, layout, options);
      break;
    case CollectiveAlgorithm::kTree:
      collective_detail::plan_tree(plan, options);
      break;
    case CollectiveAlgorithm::kHalvingDoubling:
      collective_detail::plan_halving_doubling(plan);
      break;
    case CollectiveAlgorithm::kHierarchical:
      collective_detail::plan_hierarchical(plan, layout.node_of);
      break;
    case CollectiveAlgorithm::kCrossRegion:
      collective_detail::plan_hierarchical(plan, layout.region_of);
      break;
    case CollectiveAlgorithm::kTorus2D:
      collective_detail::plan_torus2d(plan, collective_detail::torus_grid(layout, options));
      break;
    case CollectiveAlgorithm::kDirect:
      collective_detail::plan_direct(plan);
      break;
    case CollectiveAlgorithm::kNvls:
      collective_detail::plan_nvls(plan);
      break;
    case CollectiveAlgorithm::kAuto:
      break;  // rejected by applicability_error above
  }
  return plan;
}

}  // namespace dtsim
