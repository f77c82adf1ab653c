// Internal to sim/collectives: helpers shared by the planners (phase merging, grouping,
// rings, NCCL's binary trees, torus grids) and the per-algorithm entry points.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/collectives/collective_plan.h"

namespace dtsim::collective_detail {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Sizes of the even split of `total` into `parts` pieces. When `total` is not divisible,
// every piece is ceil(total / parts) bytes: the last piece is padded rather than shrunk,
// so that all transfers of a ring step are identical and the step compresses.
inline Bytes piece_of(Bytes total, int64_t parts) { return Bytes(ceil_div(total.count(), parts)); }

bool same_transfers(const std::vector<Transfer>& a, const std::vector<Transfer>& b);

// Appends `phase` to the plan, or adds its repeat to the last phase when both move
// exactly the same transfers: that is what turns a ring's 2(p-1) steps into one Phase.
// A phase without transfers or with repeat < 1 costs nothing and is dropped.
void append_phase(CollectivePlan& plan, Phase phase);

// Member indices grouped by key[i] (a node or region id); groups in order of first
// appearance, members of a group in member order.
std::vector<std::vector<int>> group_by(const std::vector<int>& key);

// "" when all groups have the same size, otherwise a sentence naming two that differ.
// `what` names a group ("node", "region") and `key` its ids, for the message.
std::string uneven_groups(const std::vector<std::vector<int>>& groups, const std::vector<int>& key,
                          const char* what);

// One step of concurrent rings: in every ring r, member ring[a] sends `bytes` to
// ring[a + 1] (wrapping). Rings are lists of member indices; transfers use global ranks.
void add_ring_step(const std::vector<std::vector<int>>& rings, const std::vector<int>& members,
                   Bytes bytes, std::vector<Transfer>& out);

// The rings a ring collective runs on, as lists of member indices. A group spread over
// several nodes of one region with the same number k > 1 of members on each, every member
// with a NIC of its own (layout.nic_per_member), runs k rings, as NCCL's channels do: each visits
// the nodes in order, leaves every node from a different member, and enters the next node at the
// member of the same local index (the same rail, as NCCL's search keeps a ring's network hops on
// one NIC index), so that the node's traffic out crosses all of its members' NICs instead of one;
// only a ring's wrap from the last node back to the first changes rail when the nodes are not a
// multiple of k. Otherwise one ring, in member order: the rings would share one NIC or one WAN
// link, and carry what one ring carries.
std::vector<std::vector<int>> channel_rings(const GroupLayout& layout);

// What NVLS moves each way over every member's link to the NVSwitch: n + ceil(n/p).
inline Bytes nvls_bytes_each_way(Bytes n, int64_t p) {
  return Bytes(n.count() + piece_of(n, p).count());
}

// The rings of a two-level algorithm: intra[j] lists group j's members in local order;
// inter[l] lists the members with local index l, one per group, in group order.
struct TwoLevelRings {
  std::vector<std::vector<int>> intra;
  std::vector<std::vector<int>> inter;
};
TwoLevelRings two_level_rings(std::vector<std::vector<int>> groups);

// A rooted binary tree over indices 0..p-1.
struct BinaryTree {
  int root = 0;
  std::vector<int> parent;                   // -1 at the root
  std::vector<std::array<int, 2>> children;  // -1 where absent
  std::vector<int> height;                   // leaves 0
  std::vector<int> depth;                    // root 0

  int root_height() const { return height[static_cast<size_t>(root)]; }
  int num_children(int v) const;
};

// NCCL's binary tree (src/graph/trees.cc, ncclGetBtree): rank r hangs below
// (r ^ b) | (b << 1), b = lowest set bit of r (or below r ^ b when that is out of range);
// rank 0 is the root with one child. Odd ranks are exactly the leaves, which is what
// makes the mirrored/shifted second tree use the other half of the ranks as interior
// nodes. Height ceil(log2 p).
BinaryTree nccl_binary_tree(int p);

// The same tree with every index v renamed map[v] (map is a permutation).
BinaryTree relabel_tree(const BinaryTree& t, const std::vector<int>& map);

// NCCL's double binary tree partner: the mirror i -> p-1-i when p is even (interior nodes
// of one tree are all leaves of the other), the shift i -> (i+1) % p when p is odd (all
// but one).
BinaryTree second_tree(const BinaryTree& a);

// Tree over 0..p-1 whose root is `root`: the NCCL tree rotated by `root`.
BinaryTree rooted_tree(int p, int root);
// The trees an operation runs over: all-reduce uses NCCL's double binary tree (the tree
// and its partner, each carrying half the data), broadcast and reduce one tree at root.
std::vector<BinaryTree> trees_for(CollectiveOp op, int p, int root);

// Logical grid of torus2d: X * Y members, member i at (i % X, i / X).
struct TorusGrid {
  int x = 0;
  int y = 0;
  std::string error;  // "" when the grid applies to the layout
};
TorusGrid torus_grid(const GroupLayout& layout, const CollectiveOptions& options);

// Per-algorithm planners. Each fills plan.phases for plan.op / plan.bytes over
// plan.members; the dispatcher has already checked applicability, p > 1 and bytes > 0.
void plan_ring(CollectivePlan& plan, const GroupLayout& layout, const CollectiveOptions& options);
void plan_tree(CollectivePlan& plan, const CollectiveOptions& options);
void plan_halving_doubling(CollectivePlan& plan);
// Hierarchical over groups of members (nodes, regions, torus rows): intra-group ring
// reduce-scatter, inter-group ring all-reduce (or RS / AG), intra-group ring all-gather.
void plan_two_level(CollectivePlan& plan, const TwoLevelRings& rings);
void plan_hierarchical(CollectivePlan& plan, const std::vector<int>& group_key);
void plan_torus2d(CollectivePlan& plan, const TorusGrid& grid);
void plan_direct(CollectivePlan& plan);
void plan_nvls(CollectivePlan& plan);

// The rings of torus2d: rows (along X) are the intra rings, columns (along Y) the inter.
TwoLevelRings torus_rings(const TorusGrid& grid);

}  // namespace dtsim::collective_detail
