// Helpers shared by the collective planners: phase merging, grouping and ring steps.
#include "sim/collectives/plan_util.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace dtsim::collective_detail {

bool same_transfers(const std::vector<Transfer>& a, const std::vector<Transfer>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].src != b[i].src || a[i].dst != b[i].dst || a[i].bytes != b[i].bytes) return false;
  }
  return true;
}

void append_phase(CollectivePlan& plan, Phase phase) {
  if (phase.transfers.empty() || phase.repeat < 1) return;
  if (!plan.phases.empty() && same_transfers(plan.phases.back().transfers, phase.transfers)) {
    plan.phases.back().repeat += phase.repeat;
    return;
  }
  plan.phases.push_back(std::move(phase));
}

std::vector<std::vector<int>> group_by(const std::vector<int>& key) {
  std::vector<std::vector<int>> groups;
  std::unordered_map<int, size_t> index;
  for (size_t i = 0; i < key.size(); ++i) {
    auto [it, inserted] = index.try_emplace(key[i], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(static_cast<int>(i));
  }
  return groups;
}

std::string uneven_groups(const std::vector<std::vector<int>>& groups, const std::vector<int>& key,
                          const char* what) {
  for (const auto& g : groups) {
    if (g.size() != groups.front().size()) {
      const auto id = [&](const std::vector<int>& grp) {
        return std::to_string(key[static_cast<size_t>(grp.front())]);
      };
      return std::string(what) + " " + id(g) + " has " + std::to_string(g.size()) + " members, " +
             what + " " + id(groups.front()) + " has " + std::to_string(groups.front().size());
    }
  }
  return "";
}

void add_ring_step(const std::vector<std::vector<int>>& rings, const std::vector<int>& members,
                   Bytes bytes, std::vector<Transfer>& out) {
  for (const auto& ring : rings) {
    if (ring.size() < 2) continue;
    for (size_t a = 0; a < ring.size(); ++a) {
      const size_t next = (a + 1) % ring.size();
      out.push_back(
          {members[static_cast<size_t>(ring[a])], members[static_cast<size_t>(ring[next])], bytes});
    }
  }
}

std::vector<std::vector<int>> channel_rings(const GroupLayout& layout) {
  const std::vector<std::vector<int>> nodes = group_by(layout.node_of);
  const size_t k = nodes.empty() ? 0 : nodes.front().size();
  const bool even = std::all_of(nodes.begin(), nodes.end(),
                                [&](const std::vector<int>& g) { return g.size() == k; });
  const bool one_region = std::all_of(layout.region_of.begin(), layout.region_of.end(),
                                      [&](int r) { return r == layout.region_of.front(); });
  if (nodes.size() < 2 || k < 2 || !even || !one_region || !layout.nic_per_member) {
    std::vector<int> one(layout.members.size());
    for (size_t i = 0; i < one.size(); ++i) one[i] = static_cast<int>(i);
    return {one};
  }
  // Ring c enters node n at its member (c - n) mod k and leaves from the one before: the
  // next node is entered at the same local index, over the same rail.
  std::vector<std::vector<int>> rings(k);
  for (size_t c = 0; c < k; ++c) {
    for (size_t n = 0; n < nodes.size(); ++n) {
      const size_t start = (c + k - n % k) % k;
      for (size_t j = 0; j < k; ++j) rings[c].push_back(nodes[n][(start + j) % k]);
    }
  }
  return rings;
}

TwoLevelRings two_level_rings(std::vector<std::vector<int>> groups) {
  TwoLevelRings rings;
  const size_t g = groups.empty() ? 0 : groups.front().size();
  rings.inter.assign(g, {});
  for (const auto& group : groups) {
    for (size_t l = 0; l < g; ++l) rings.inter[l].push_back(group[l]);
  }
  rings.intra = std::move(groups);
  return rings;
}

}  // namespace dtsim::collective_detail
