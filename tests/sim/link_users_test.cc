// LinkUsers: the groups on each link, the first inline and the others in side lists.
#include "sim/link_users.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace dtsim {
namespace {

// The other groups add() reported, sorted.
std::vector<uint32_t> add(LinkUsers& users, LinkId l, uint32_t group) {
  std::vector<uint32_t> others;
  users.add(l, group, [&](uint32_t other) { others.push_back(other); });
  std::sort(others.begin(), others.end());
  return others;
}

TEST(LinkUsers, OneGroupsFlowsComeAndGoWithoutOthers) {
  LinkUsers users(2);
  EXPECT_TRUE(users.empty(0));
  EXPECT_TRUE(add(users, 0, 7).empty());
  EXPECT_TRUE(add(users, 0, 7).empty());
  EXPECT_FALSE(users.empty(0));
  EXPECT_TRUE(users.empty(1));
  users.remove(0, 7);
  EXPECT_FALSE(users.empty(0));
  users.remove(0, 7);
  EXPECT_TRUE(users.empty(0));
}

TEST(LinkUsers, EveryOtherGroupOnTheLinkIsReported) {
  LinkUsers users(1);
  add(users, 0, 1);
  EXPECT_EQ(add(users, 0, 2), (std::vector<uint32_t>{1}));
  EXPECT_EQ(add(users, 0, 3), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(add(users, 0, 2), (std::vector<uint32_t>{1, 3}));  // 2 is there: not an other
}

TEST(LinkUsers, WhenTheFirstGroupLeavesAnotherTakesItsPlace) {
  LinkUsers users(1);
  add(users, 0, 1);
  add(users, 0, 2);
  add(users, 0, 3);
  users.remove(0, 1);
  EXPECT_FALSE(users.empty(0));
  EXPECT_EQ(add(users, 0, 4), (std::vector<uint32_t>{2, 3}));
  users.remove(0, 4);
  users.remove(0, 3);
  users.remove(0, 2);
  EXPECT_TRUE(users.empty(0));
  // The emptied link starts again inline, its side list back among the free ones.
  EXPECT_TRUE(add(users, 0, 5).empty());
  EXPECT_EQ(add(users, 0, 6), (std::vector<uint32_t>{5}));
}

TEST(LinkUsers, SideListsOfLinksStayApart) {
  LinkUsers users(2);
  add(users, 0, 1);
  add(users, 0, 2);
  add(users, 1, 3);
  add(users, 1, 4);
  users.remove(0, 2);
  EXPECT_EQ(add(users, 1, 5), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(add(users, 0, 6), (std::vector<uint32_t>{1}));
}

TEST(LinkUsers, AGroupThatIsNotOnTheLinkCannotLeaveIt) {
  LinkUsers users(1);
  EXPECT_THROW(users.remove(0, 1), InternalError);
  add(users, 0, 1);
  add(users, 0, 2);
  EXPECT_THROW(users.remove(0, 3), InternalError);
}

}  // namespace
}  // namespace dtsim
