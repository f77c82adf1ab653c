// MaxMinSolver's LOCAL CHANGES: a removal that frees only unclaimed capacity and a variable
// added where there is room are settled without the filling, by hand-worked allocations;
// everything else still solves its component.
#include <gtest/gtest.h>

#include <vector>

#include "sim/maxmin_solver.h"
#include "tests/sim/maxmin_test_helpers.h"

namespace dtsim {
namespace {

using VarId = MaxMinSolver::VarId;
using ConstraintId = MaxMinSolver::ConstraintId;

using testing::add;

// An NVSwitch port P (100) carries an NVLink flow A and a network flow B, which its NIC N
// (25) limits: A = 75, B = 25 with its bottleneck on N.
struct PortAndNic {
  MaxMinSolver s;
  ConstraintId port = s.add_constraint(100.0);
  ConstraintId nic = s.add_constraint(25.0);
  VarId a = add(s, {port});
  VarId b = add(s, {port, nic});
};

TEST(MaxMinLocalChanges, AFlowEndingBesideOthersLimitedElsewhereChangesNoRate) {
  PortAndNic x;
  x.s.solve();
  ASSERT_DOUBLE_EQ(x.s.rate(x.a), 75.0);
  ASSERT_DOUBLE_EQ(x.s.rate(x.b), 25.0);
  const uint64_t before = x.s.solves_without_filling();
  x.s.remove_variable(x.a);
  std::vector<VarId> vars;
  std::vector<ConstraintId> cons;
  x.s.solve(&vars, &cons);
  // B keeps 25: the 75 that A freed on P is no use to it.
  EXPECT_EQ(x.s.solves_without_filling(), before + 1);
  EXPECT_DOUBLE_EQ(x.s.rate(x.b), 25.0);
  EXPECT_TRUE(vars.empty());
  EXPECT_EQ(cons, std::vector<ConstraintId>{x.port});
  EXPECT_DOUBLE_EQ(x.s.usage(x.port), 25.0);
}

TEST(MaxMinLocalChanges, AFlowEndingOnAnotherFlowsBottleneckSolves) {
  // A and B share P (100) alone: 50 each, both bottlenecked there. A ends: B takes 100.
  MaxMinSolver s;
  const ConstraintId p = s.add_constraint(100.0);
  const VarId a = add(s, {p});
  const VarId b = add(s, {p});
  s.solve();
  ASSERT_DOUBLE_EQ(s.rate(b), 50.0);
  s.remove_variable(a);
  std::vector<VarId> vars;
  s.solve(&vars);
  EXPECT_EQ(s.solves_without_filling(), 0u);
  EXPECT_DOUBLE_EQ(s.rate(b), 100.0);
  EXPECT_EQ(vars, std::vector<VarId>{b});
}

TEST(MaxMinLocalChanges, AFlowStartingInSpareCapacityTakesItWithoutSolving) {
  PortAndNic x;
  x.s.remove_variable(x.a);
  x.s.solve();  // B alone: 25, bottleneck N; P has 75 spare
  const uint64_t before = x.s.solves_without_filling();
  // D over P and a link Q (200) of its own: 75 of P's spare. B stands at 25 < 75 on P.
  const ConstraintId q = x.s.add_constraint(200.0);
  const VarId d = add(x.s, {q, x.port});
  std::vector<VarId> vars;
  std::vector<ConstraintId> cons;
  x.s.solve(&vars, &cons);
  EXPECT_EQ(x.s.solves_without_filling(), before + 1);
  EXPECT_DOUBLE_EQ(x.s.rate(d), 75.0);
  EXPECT_DOUBLE_EQ(x.s.rate(x.b), 25.0);
  EXPECT_EQ(vars, std::vector<VarId>{d});
  EXPECT_EQ(cons, (std::vector<ConstraintId>{q, x.port}));
  EXPECT_DOUBLE_EQ(x.s.usage(x.port), 100.0);

  // E on P finds no spare and D above it there: the component is solved. P is shared by
  // D and E at 37.5 each beside B's 25.
  const VarId e = add(x.s, {x.port});
  vars.clear();
  x.s.solve(&vars);
  EXPECT_EQ(x.s.solves_without_filling(), before + 1);
  EXPECT_DOUBLE_EQ(x.s.rate(d), 37.5);
  EXPECT_DOUBLE_EQ(x.s.rate(e), 37.5);
  EXPECT_DOUBLE_EQ(x.s.rate(x.b), 25.0);
  EXPECT_EQ(vars.size(), 2u);
}

TEST(MaxMinLocalChanges, AWeightedFlowIsComparedByItsLevel) {
  // B (weight 1) runs at 25 on P (100), limited by N. C of weight 4 would take P's 75
  // spare at level 75 / 4 = 18.75, below B's 25 on P: C is not placed (B must give way).
  PortAndNic x;
  x.s.remove_variable(x.a);
  x.s.solve();
  const uint64_t before = x.s.solves_without_filling();
  const VarId c = add(x.s, {x.port}, 4.0);
  x.s.solve();
  EXPECT_EQ(x.s.solves_without_filling(), before);
  // The filling: level 20 saturates P (20 + 4 x 20 = 100) before N's 25: B = 20, C = 80.
  EXPECT_DOUBLE_EQ(x.s.rate(x.b), 20.0);
  EXPECT_DOUBLE_EQ(x.s.rate(c), 80.0);
}

TEST(MaxMinLocalChanges, ACapacityChangeAlwaysSolves) {
  PortAndNic x;
  x.s.solve();
  x.s.set_capacity(x.port, 40.0);
  x.s.remove_variable(x.a);
  x.s.solve();
  EXPECT_EQ(x.s.solves_without_filling(), 0u);
  EXPECT_DOUBLE_EQ(x.s.rate(x.b), 25.0);
  EXPECT_DOUBLE_EQ(x.s.usage(x.port), 25.0);
}

TEST(MaxMinLocalChanges, OffSolvesEveryChange) {
  PortAndNic x;
  x.s.set_local_changes(false);
  x.s.solve();
  x.s.remove_variable(x.a);
  x.s.solve();
  EXPECT_EQ(x.s.solves_without_filling(), 0u);
  EXPECT_DOUBLE_EQ(x.s.rate(x.b), 25.0);
}

// The counts a run reports: every solve with something to do is settled one way, a solve
// with nothing to do is not counted, and a whole component's solve adds its variables.
TEST(MaxMinLocalChanges, EachSolveIsCountedByHowItWasSettled) {
  PortAndNic off;
  off.s.set_local_changes(false);
  off.s.solve();
  off.s.solve();  // nothing changed
  off.s.remove_variable(off.a);
  off.s.solve();
  const MaxMinSolveCounts& c = off.s.counts();
  EXPECT_EQ(c.solves, 2u);
  EXPECT_EQ(c.components, 2u);
  EXPECT_EQ(c.component_variables, 3u);  // A and B, then B
  EXPECT_EQ(c.without_filling + c.affected_sets, 0u);

  PortAndNic on;
  on.s.solve();
  const MaxMinSolveCounts first = on.s.counts();
  on.s.remove_variable(on.a);  // frees only what B cannot use: settled in place
  on.s.solve();
  const MaxMinSolveCounts& then = on.s.counts();
  EXPECT_EQ(then.solves, first.solves + 1);
  EXPECT_EQ(then.without_filling, first.without_filling + 1);
  EXPECT_EQ(then.solves, then.without_filling + then.affected_sets + then.components);
}

// Two runs' counts add field by field (a local-SGD run reports its step's and its local
// step's together): each field gets a different power of two, so a field left out or
// added to the wrong one shows.
TEST(MaxMinLocalChanges, CountsOfTwoRunsAddFieldByField) {
  MaxMinSolveCounts a{1, 2, 4, 8, 16, 32};
  const MaxMinSolveCounts b{64, 128, 256, 512, 1024, 2048};
  a += b;
  EXPECT_EQ(a.solves, 65u);
  EXPECT_EQ(a.without_filling, 130u);
  EXPECT_EQ(a.affected_sets, 260u);
  EXPECT_EQ(a.components, 520u);
  EXPECT_EQ(a.affected_sets_given_up, 1040u);
  EXPECT_EQ(a.component_variables, 2080u);
}

}  // namespace
}  // namespace dtsim
