// LinkUsers: a group's flow leaving a link that has a side list, and the lists' reuse.
#include "sim/link_users.h"

#include <algorithm>

namespace dtsim {

std::vector<std::pair<uint32_t, uint32_t>>& LinkUsers::more_of(First& first) {
  if (first.more == 0) {
    if (free_more_.empty()) {
      more_.emplace_back();
      first.more = static_cast<uint32_t>(more_.size());
    } else {
      first.more = free_more_.back();
      free_more_.pop_back();
    }
  }
  return more_[first.more - 1];
}

void LinkUsers::remove_slow(First& first, uint32_t group) {
  DTSIM_CHECK(first.count > 0, "a flow leaves a link no flow is on");
  if (first.group == group) {
    if (--first.count > 0) return;
    if (first.more == 0) return;
    // The first group left: another takes its place, so that empty() stays one test.
    auto& more = more_[first.more - 1];
    first.group = more.back().first;
    first.count = more.back().second;
    more.pop_back();
  } else {
    DTSIM_CHECK(first.more != 0, "a flow leaves a link its group is not on");
    auto& more = more_[first.more - 1];
    const auto it = std::find_if(more.begin(), more.end(),
                                 [&](const auto& user) { return user.first == group; });
    DTSIM_CHECK(it != more.end(), "a flow leaves a link its group is not on");
    if (--it->second > 0) return;
    more.erase(it);
  }
  if (more_[first.more - 1].empty()) {
    free_more_.push_back(first.more);
    first.more = 0;
  }
}

}  // namespace dtsim
