// Pipelined binary-tree collectives: NCCL's double binary tree all-reduce (Sanders,
// Speck & Traff 2009; NCCL 2.4), and single-tree broadcast / reduce.
#include <utility>

#include "sim/collectives/plan_util.h"

namespace dtsim::collective_detail {

// Schedule, with c chunks of s bytes per tree and h the root's height (leaves 0):
//   reduce:    node v sends chunk k to its parent at step k + height(v). Its children, being
//              lower, sent chunk k by step k + height(v) - 1, so v holds its subtree's sum.
//   broadcast: node u at depth d sends chunk k to its children at step k + base + d, where
//              base = h for all-reduce (the root has chunk k reduced after step k + h - 1)
//              and 0 for a plain broadcast (the root owns the data).
// All-reduce: each of the two trees carries ceil(n/2) bytes, c = ceil(ceil(n/2) /
// chunk_bytes) chunks of s = ceil(ceil(n/2) / c); both trees have the same shape, so they
// run in lockstep in the same phases. The last transfer is the broadcast of chunk c-1 by
// the deepest interior node (depth h-1) at step (c-1) + h + (h-1): exactly 2h + c - 1
// steps. Broadcast and reduce use one tree rooted at options.root carrying n: h + c - 1.
void plan_tree(CollectivePlan& plan, const CollectiveOptions& options) {
  const int p = static_cast<int>(plan.members.size());
  const bool all_reduce = plan.op == CollectiveOp::kAllReduce;
  const std::vector<BinaryTree> trees = trees_for(plan.op, p, options.root);
  const Bytes per_tree = all_reduce ? piece_of(plan.bytes, 2) : plan.bytes;
  const int64_t chunks = ceil_div(per_tree.count(), options.chunk_bytes.count());
  const Bytes chunk = piece_of(per_tree, chunks);
  const int64_t h = trees.front().root_height();
  const bool up = all_reduce || plan.op == CollectiveOp::kReduce;
  const bool down = all_reduce || plan.op == CollectiveOp::kBroadcast;
  const int64_t down_base = all_reduce ? h : 0;
  const int64_t steps = (all_reduce ? 2 * h : h) + chunks - 1;
  // From the step where the last edge starts to the one where the first edge finishes,
  // every edge carries a chunk and the steps are identical.
  const int64_t steady_first = (all_reduce ? 2 * h : h) - 1;
  const auto busy = [&](int64_t t, int64_t offset) { return t >= offset && t - offset < chunks; };
  const auto rank = [&](int v) { return plan.members[static_cast<size_t>(v)]; };

  for (int64_t t = 0; t < steps; ++t) {
    Phase phase;
    for (const BinaryTree& tree : trees) {
      for (int v = 0; v < p; ++v) {
        const auto vi = static_cast<size_t>(v);
        if (up && tree.parent[vi] >= 0 && busy(t, tree.height[vi])) {
          phase.transfers.push_back({rank(v), rank(tree.parent[vi]), chunk});
        }
        if (down && busy(t, down_base + tree.depth[vi])) {
          for (int c : tree.children[vi]) {
            if (c >= 0) phase.transfers.push_back({rank(v), rank(c), chunk});
          }
        }
      }
    }
    if (t == steady_first && chunks - 1 >= t) {
      phase.repeat = chunks - t;
      t = chunks - 1;
    }
    append_phase(plan, std::move(phase));
  }
}

}  // namespace dtsim::collective_detail
