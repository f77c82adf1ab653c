// NCCL's binary tree layout (src/graph/trees.cc) and its double-tree partner.
#include <algorithm>

#include "sim/collectives/plan_util.h"

namespace dtsim::collective_detail {

namespace {

// Fills children, depth and height from root and parent.
void finish_tree(BinaryTree& t) {
  const size_t p = t.parent.size();
  t.children.assign(p, {-1, -1});
  for (size_t v = 0; v < p; ++v) {
    const int u = t.parent[v];
    if (u < 0) continue;
    auto& slots = t.children[static_cast<size_t>(u)];
    (slots[0] < 0 ? slots[0] : slots[1]) = static_cast<int>(v);
  }
  // Breadth-first order: depths top-down, then heights bottom-up along the reverse.
  std::vector<int> order{t.root};
  t.depth.assign(p, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const int u = order[i];
    for (int c : t.children[static_cast<size_t>(u)]) {
      if (c < 0) continue;
      t.depth[static_cast<size_t>(c)] = t.depth[static_cast<size_t>(u)] + 1;
      order.push_back(c);
    }
  }
  t.height.assign(p, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int u = t.parent[static_cast<size_t>(*it)];
    if (u >= 0) {
      int& h = t.height[static_cast<size_t>(u)];
      h = std::max(h, t.height[static_cast<size_t>(*it)] + 1);
    }
  }
}

}  // namespace

int BinaryTree::num_children(int v) const {
  const auto& c = children[static_cast<size_t>(v)];
  return (c[0] >= 0 ? 1 : 0) + (c[1] >= 0 ? 1 : 0);
}

BinaryTree nccl_binary_tree(int p) {
  BinaryTree t;
  t.root = 0;
  t.parent.assign(static_cast<size_t>(p), -1);
  for (int r = 1; r < p; ++r) {
    const int low_bit = r & -r;
    int up = (r ^ low_bit) | (low_bit << 1);
    if (up >= p) up = r ^ low_bit;
    t.parent[static_cast<size_t>(r)] = up;
  }
  finish_tree(t);
  return t;
}

BinaryTree relabel_tree(const BinaryTree& t, const std::vector<int>& map) {
  BinaryTree out;
  out.root = map[static_cast<size_t>(t.root)];
  out.parent.assign(t.parent.size(), -1);
  for (size_t v = 0; v < t.parent.size(); ++v) {
    const int u = t.parent[v];
    out.parent[static_cast<size_t>(map[v])] = u < 0 ? -1 : map[static_cast<size_t>(u)];
  }
  finish_tree(out);
  return out;
}

BinaryTree second_tree(const BinaryTree& a) {
  const int p = static_cast<int>(a.parent.size());
  std::vector<int> map(static_cast<size_t>(p));
  for (int i = 0; i < p; ++i) map[static_cast<size_t>(i)] = p % 2 == 0 ? p - 1 - i : (i + 1) % p;
  return relabel_tree(a, map);
}

BinaryTree rooted_tree(int p, int root) {
  const BinaryTree base = nccl_binary_tree(p);
  if (root == 0) return base;
  std::vector<int> map(static_cast<size_t>(p));
  for (int i = 0; i < p; ++i) map[static_cast<size_t>(i)] = (i + root) % p;
  return relabel_tree(base, map);
}

std::vector<BinaryTree> trees_for(CollectiveOp op, int p, int root) {
  std::vector<BinaryTree> trees;
  if (op == CollectiveOp::kAllReduce) {
    trees.push_back(nccl_binary_tree(p));
    trees.push_back(second_tree(trees.front()));
  } else {
    trees.push_back(rooted_tree(p, root));
  }
  return trees;
}

}  // namespace dtsim::collective_detail
