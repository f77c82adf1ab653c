// The groups whose flows are active on each link, and how many each: the first group of a
// link kept inline, any others in a side list.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/check.h"
#include "sim/topology.h"

namespace dtsim {

// A link rarely carries flows of more than one group at once (a ring's step, a tree's
// edge), and a flow's start and end each look at every link of its route: inline, the
// common case costs a 12-byte entry and no pointer to follow.
class LinkUsers {
 public:
  explicit LinkUsers(size_t links) : first_(links) {}

  bool empty(LinkId l) const { return first_[l].count == 0; }

  // One more flow of `group` on link l; calls on_other(g) for every other group on it.
  template <typename OnOther>
  void add(LinkId l, uint32_t group, OnOther&& on_other) {
    First& first = first_[l];
    if (first.count == 0) {
      first.group = group;
      first.count = 1;
      return;
    }
    bool present = false;
    if (first.group == group) {
      ++first.count;
      present = true;
    } else {
      on_other(first.group);
    }
    if (first.more == 0) {
      if (!present) more_of(first).emplace_back(group, 1);
      return;
    }
    for (auto& [other, count] : more_[first.more - 1]) {
      if (other == group) {
        ++count;
        present = true;
      } else {
        on_other(other);
      }
    }
    if (!present) more_[first.more - 1].emplace_back(group, 1);
  }

  // One flow of `group` fewer on link l (it must have one there).
  void remove(LinkId l, uint32_t group) {
    First& first = first_[l];
    if (first.group == group && first.count > 0 && (first.count > 1 || first.more == 0)) {
      --first.count;
      return;
    }
    remove_slow(first, group);
  }

  // What a memory estimate counts per link (side lists aside).
  static constexpr size_t bytes_per_link() { return sizeof(First); }

 private:
  struct First {
    uint32_t group = 0;
    uint32_t count = 0;  // 0: no group on the link (and no side list)
    uint32_t more = 0;   // side list + 1, 0 none
  };
  // remove() where a side list is involved.
  void remove_slow(First& first, uint32_t group);
  // The link's side list, taken from the free ones if it has none.
  std::vector<std::pair<uint32_t, uint32_t>>& more_of(First& first);

  std::vector<First> first_;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> more_;
  std::vector<uint32_t> free_more_;
};

}  // namespace dtsim
