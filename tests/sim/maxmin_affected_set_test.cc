// MaxMinSolver's AFFECTED SET: a change solves only the variables it can move, grows that
// set where a frozen variable loses its bottleneck, and gives up for the component's solve
// on a capacity change or a set too large; hand-worked allocations.
#include <gtest/gtest.h>

#include <vector>

#include "sim/maxmin_solver.h"
#include "tests/sim/maxmin_test_helpers.h"

namespace dtsim {
namespace {

using VarId = MaxMinSolver::VarId;
using ConstraintId = MaxMinSolver::ConstraintId;

using testing::add;

TEST(MaxMinAffectedSet, ARemovalMovesOnlyTheFlowsItsLinkHeld) {
  // N (10) holds X and Y at 5 each; Y also crosses S (100), which A and B share with it:
  // 47.5 each, their bottleneck S. One component of four. A ends: only B can move, and
  // takes S's 95 beside Y's frozen 5; X and Y are neither solved nor reported, nor is S,
  // whose usage stays 100.
  MaxMinSolver s;
  const ConstraintId n = s.add_constraint(10.0);
  const ConstraintId sw = s.add_constraint(100.0);
  const VarId x = add(s, {n});
  const VarId y = add(s, {n, sw});
  const VarId a = add(s, {sw});
  const VarId b = add(s, {sw});
  s.solve();
  ASSERT_DOUBLE_EQ(s.rate(a), 47.5);
  const uint64_t before = s.affected_set_solves();
  s.remove_variable(a);
  std::vector<VarId> vars;
  std::vector<ConstraintId> cons;
  s.solve(&vars, &cons);
  EXPECT_EQ(s.affected_set_solves(), before + 1);
  EXPECT_EQ(vars, std::vector<VarId>{b});
  EXPECT_TRUE(cons.empty());
  EXPECT_DOUBLE_EQ(s.rate(b), 95.0);
  EXPECT_DOUBLE_EQ(s.rate(x), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(y), 5.0);
  EXPECT_DOUBLE_EQ(s.usage(sw), 100.0);
}

TEST(MaxMinAffectedSet, AFrozenFlowAboveTheSetsLevelJoinsIt) {
  // T (60) holds B and C at 30, its level, first; A takes S's (100) other 70. C ends: B,
  // alone in the set, gets S's 30 beside A's frozen 70, so S fixes B at 30 while A stands
  // at 70 on it. A joins, and S shares 50 and 50 (B's 50 fits T's 60).
  MaxMinSolver s;
  const ConstraintId sw = s.add_constraint(100.0);
  const ConstraintId t = s.add_constraint(60.0);
  const VarId a = add(s, {sw});
  const VarId b = add(s, {sw, t});
  const VarId c = add(s, {t});
  s.solve();
  ASSERT_DOUBLE_EQ(s.rate(a), 70.0);
  ASSERT_DOUBLE_EQ(s.rate(b), 30.0);
  const uint64_t before = s.affected_set_solves();
  s.remove_variable(c);
  std::vector<VarId> vars;
  s.solve(&vars);
  EXPECT_EQ(s.affected_set_solves(), before + 1);
  EXPECT_DOUBLE_EQ(s.rate(a), 50.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 50.0);
  EXPECT_EQ(vars.size(), 2u);
}

TEST(MaxMinAffectedSet, AFrozenFlowWhoseLinkIsNoLongerFullJoinsIt) {
  // U (100) holds A and B at 50, both bottlenecked there; B also crosses V (80). C joins
  // on V: V's spare 30 is below B's 50, so C is solved: alone it gets 30 and B (50, above)
  // joins; B and C then share V at 40 each, which leaves U at 90 with A's claim on it, so A
  // joins too and takes 60.
  MaxMinSolver s;
  const ConstraintId u = s.add_constraint(100.0);
  const ConstraintId v = s.add_constraint(80.0);
  const VarId a = add(s, {u});
  const VarId b = add(s, {u, v});
  s.solve();
  ASSERT_DOUBLE_EQ(s.rate(b), 50.0);
  const uint64_t before = s.affected_set_solves();
  const VarId c = add(s, {v});
  s.solve();
  EXPECT_EQ(s.affected_set_solves(), before + 1);
  EXPECT_DOUBLE_EQ(s.rate(a), 60.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 40.0);
  EXPECT_DOUBLE_EQ(s.rate(c), 40.0);
  EXPECT_DOUBLE_EQ(s.usage(u), 100.0);
  EXPECT_DOUBLE_EQ(s.usage(v), 80.0);
}

TEST(MaxMinAffectedSet, ACapacityChangeSolvesTheComponent) {
  // A smaller capacity may no longer hold the rates frozen on it: the component is solved
  // whole.
  MaxMinSolver s;
  const ConstraintId sw = s.add_constraint(100.0);
  const VarId a = add(s, {sw});
  const VarId b = add(s, {sw});
  s.solve();
  const uint64_t before = s.affected_set_solves();
  s.set_capacity(sw, 40.0);
  s.solve();
  EXPECT_EQ(s.affected_set_solves(), before);
  EXPECT_DOUBLE_EQ(s.rate(a), 20.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 20.0);
}

TEST(MaxMinAffectedSet, ASetTooLargeSolvesTheComponent) {
  // 5,000 flows share S (1000): one ends and the 4,999 it held all move, more than the set
  // may hold; the component is solved instead, with the same result.
  MaxMinSolver s;
  const ConstraintId sw = s.add_constraint(1000.0);
  std::vector<VarId> vars;
  for (int i = 0; i < 5000; ++i) vars.push_back(add(s, {sw}));
  s.solve();
  const uint64_t before = s.affected_set_solves();
  s.remove_variable(vars.back());
  vars.pop_back();
  s.solve();
  EXPECT_EQ(s.affected_set_solves(), before);
  for (const VarId v : vars) ASSERT_DOUBLE_EQ(s.rate(v), 1000.0 / 4999.0);
}

TEST(MaxMinAffectedSet, OffWithTheOtherLocalChanges) {
  MaxMinSolver s;
  s.set_local_changes(false);
  const ConstraintId sw = s.add_constraint(100.0);
  const VarId a = add(s, {sw});
  const VarId b = add(s, {sw});
  s.solve();
  s.remove_variable(a);
  s.solve();
  EXPECT_EQ(s.affected_set_solves(), 0u);
  EXPECT_DOUBLE_EQ(s.rate(b), 100.0);
}

// The counts a run reports (MaxMinSolveCounts): a solve settled by its affected set, one
// whose set grew too large (given up, then the component solved whole), and a capacity
// change (the component solved whole without trying a set) each count once, in one place.
TEST(MaxMinAffectedSet, TheCountsSayHowEachSolveWent) {
  MaxMinSolver s;
  const ConstraintId n = s.add_constraint(10.0);
  const ConstraintId sw = s.add_constraint(100.0);
  add(s, {n});
  add(s, {n, sw});
  const VarId a = add(s, {sw});
  add(s, {sw});
  const ConstraintId big = s.add_constraint(1000.0);
  std::vector<VarId> many;
  for (int i = 0; i < 5000; ++i) many.push_back(add(s, {big}));
  s.solve();
  const MaxMinSolveCounts start = s.counts();
  const auto expect_step = [&](const MaxMinSolveCounts& before, uint64_t affected,
                               uint64_t components, uint64_t given_up, uint64_t variables) {
    const MaxMinSolveCounts& now = s.counts();
    EXPECT_EQ(now.solves, before.solves + 1);
    EXPECT_EQ(now.without_filling, before.without_filling);
    EXPECT_EQ(now.affected_sets, before.affected_sets + affected);
    EXPECT_EQ(now.components, before.components + components);
    EXPECT_EQ(now.affected_sets_given_up, before.affected_sets_given_up + given_up);
    EXPECT_EQ(now.component_variables, before.component_variables + variables);
    EXPECT_EQ(now.solves, now.without_filling + now.affected_sets + now.components);
  };
  s.remove_variable(a);  // moves B alone (ARemovalMovesOnlyTheFlowsItsLinkHeld)
  s.solve();
  expect_step(start, 1, 0, 0, 0);
  const MaxMinSolveCounts after_set = s.counts();
  s.remove_variable(many.back());  // moves 4,999: too many for a set
  s.solve();
  expect_step(after_set, 0, 1, 1, 4999);
  const MaxMinSolveCounts after_big = s.counts();
  s.set_capacity(sw, 40.0);  // solved whole without a set: X, Y and B
  s.solve();
  expect_step(after_big, 0, 1, 0, 3);
}

}  // namespace
}  // namespace dtsim
