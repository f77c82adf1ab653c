// Tests of MaxMinSolver: hand-worked allocations, incremental vs from-scratch, optimality.
#include "sim/check.h"
#include "sim/maxmin_solver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace dtsim {
namespace {

using VarId = MaxMinSolver::VarId;
using ConstraintId = MaxMinSolver::ConstraintId;
constexpr double kInf = MaxMinSolver::kUnbounded;

// std::span cannot be built from a braced list in C++20.
VarId add(MaxMinSolver& s, std::initializer_list<ConstraintId> cons, double weight = 1.0,
          double bound = kInf) {
  const std::vector<ConstraintId> v(cons);
  return s.add_variable(v, weight, bound);
}

bool near(double a, double b, double rel = 1e-9) {
  return std::abs(a - b) <= rel * std::max({1.0, std::abs(a), std::abs(b)});
}

TEST(MaxMinSolver, SingleFlowGetsFullCapacity) {
  // Level of L = 10 / 1 = 10, so A = 10.
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(10.0);
  const VarId a = add(s, {l});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 10.0);
  EXPECT_DOUBLE_EQ(s.usage(l), 10.0);
}

TEST(MaxMinSolver, BoundBelowCapacity) {
  // Bound level 3 / 1 = 3 < link level 10: A = 3, and L is left with usage 3.
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(10.0);
  const VarId a = add(s, {l}, 1.0, 3.0);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 3.0);
  EXPECT_DOUBLE_EQ(s.usage(l), 3.0);
}

TEST(MaxMinSolver, BoundedFlowLeavesRestToOthers) {
  // A bound 2 (level 2) before L's level 10 / 2 = 5: A = 2; then L has 8 left for B alone.
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(10.0);
  const VarId a = add(s, {l}, 1.0, 2.0);
  const VarId b = add(s, {l});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 2.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 8.0);
}

TEST(MaxMinSolver, TwoFlowsShareEqually) {
  // Level 10 / (1 + 1) = 5 each.
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(10.0);
  const VarId a = add(s, {l});
  const VarId b = add(s, {l});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 5.0);
}

TEST(MaxMinSolver, WeightedSharing) {
  // Level 100 / (1 + 1 + 2) = 25: rates 1*25, 1*25, 2*25 = 25, 25, 50.
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(100.0);
  const VarId a = add(s, {l}, 1.0);
  const VarId b = add(s, {l}, 1.0);
  const VarId c = add(s, {l}, 2.0);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 25.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 25.0);
  EXPECT_DOUBLE_EQ(s.rate(c), 50.0);
  EXPECT_DOUBLE_EQ(s.usage(l), 100.0);
}

TEST(MaxMinSolver, ParkingLot) {
  // A on L1+L2, B on L1, C on L2, both caps 10. Levels: L1 10/2 = 5, L2 10/2 = 5. L1
  // saturates at 5: A = B = 5; L2 has 10 - 5 = 5 left for C alone: C = 5.
  MaxMinSolver s;
  const ConstraintId l1 = s.add_constraint(10.0);
  const ConstraintId l2 = s.add_constraint(10.0);
  const VarId a = add(s, {l1, l2});
  const VarId b = add(s, {l1});
  const VarId c = add(s, {l2});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(c), 5.0);

  // L2 = 4. Levels: L1 10/2 = 5, L2 4/2 = 2. L2 saturates first at 2: A = C = 2. L1 has
  // 10 - 2 = 8 left for B alone (level 8): B = 8. Usages: L1 2 + 8 = 10, L2 2 + 2 = 4.
  s.set_capacity(l2, 4.0);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 2.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 8.0);
  EXPECT_DOUBLE_EQ(s.rate(c), 2.0);
  EXPECT_DOUBLE_EQ(s.usage(l1), 10.0);
  EXPECT_DOUBLE_EQ(s.usage(l2), 4.0);
}

TEST(MaxMinSolver, BottleneckFreesCapacityElsewhere) {
  // X cap 1 has A, B; Y cap 10 has B, C. Levels: X 1/2 = 0.5, Y 10/2 = 5. X saturates
  // first: A = B = 0.5. Y has 10 - 0.5 = 9.5 left for C alone: C = 9.5.
  MaxMinSolver s;
  const ConstraintId x = s.add_constraint(1.0);
  const ConstraintId y = s.add_constraint(10.0);
  const VarId a = add(s, {x});
  const VarId b = add(s, {x, y});
  const VarId c = add(s, {y});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(b), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(c), 9.5);
  EXPECT_DOUBLE_EQ(s.usage(y), 10.0);
}

TEST(MaxMinSolver, SetCapacityTriggersRecomputation) {
  // A alone on L: 10, then 3 after the capacity drops to 3.
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(10.0);
  const VarId a = add(s, {l});
  s.solve();
  EXPECT_FALSE(s.dirty());
  s.set_capacity(l, 3.0);
  EXPECT_TRUE(s.dirty());
  EXPECT_DOUBLE_EQ(s.capacity(l), 3.0);
  std::vector<VarId> vars;
  std::vector<ConstraintId> cons;
  s.solve(&vars, &cons);
  EXPECT_FALSE(s.dirty());
  EXPECT_DOUBLE_EQ(s.rate(a), 3.0);
  EXPECT_EQ(vars, std::vector<VarId>{a});
  EXPECT_EQ(cons, std::vector<ConstraintId>{l});
}

TEST(MaxMinSolver, ZeroCapacity) {
  // Z cap 0 has A, B: level 0, so A = B = 0. M cap 10 has A, C: 10 - 0 left, so C = 10.
  MaxMinSolver s;
  const ConstraintId z = s.add_constraint(0.0);
  const ConstraintId m = s.add_constraint(10.0);
  const VarId a = add(s, {z, m});
  const VarId b = add(s, {z});
  const VarId c = add(s, {m});
  s.solve();
  EXPECT_EQ(s.rate(a), 0.0);
  EXPECT_EQ(s.rate(b), 0.0);
  EXPECT_DOUBLE_EQ(s.rate(c), 10.0);
  EXPECT_EQ(s.usage(z), 0.0);
}

TEST(MaxMinSolver, RepeatedConstraintCountsOnce) {
  // A lists L three times but counts once: level 10 / 2 = 5, A = B = 5, usage 10.
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(10.0);
  const VarId a = add(s, {l, l, l});
  const VarId b = add(s, {l});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 5.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 5.0);
  EXPECT_DOUBLE_EQ(s.usage(l), 10.0);
  // Removing A must detach it once, leaving B alone at 10.
  s.remove_variable(a);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(b), 10.0);
}

TEST(MaxMinSolver, RemovingLastVariableZeroesUsage) {
  // A alone on L uses all 10; once A is gone L has no variables, so usage 0 (reported).
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(10.0);
  const VarId a = add(s, {l});
  s.solve();
  EXPECT_DOUBLE_EQ(s.usage(l), 10.0);
  s.remove_variable(a);
  EXPECT_TRUE(s.dirty());
  std::vector<VarId> vars;
  std::vector<ConstraintId> cons;
  s.solve(&vars, &cons);
  EXPECT_TRUE(vars.empty());
  EXPECT_EQ(cons, std::vector<ConstraintId>{l});
  EXPECT_EQ(s.usage(l), 0.0);
  EXPECT_EQ(s.num_variables(), 0u);
}

TEST(MaxMinSolver, VariableWithoutConstraintsGetsItsBound) {
  MaxMinSolver s;
  const VarId a = s.add_variable({}, 2.0, 7.0);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(a), 7.0);
}

// A broken invariant throws InternalError, which a host process can catch and survive.
TEST(MaxMinSolver, VariableWithoutConstraintsNeedsBound) {
  MaxMinSolver s;
  try {
    (void)s.add_variable({}, 1.0);
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("finite bound"), std::string::npos) << e.what();
  }
}

TEST(MaxMinSolver, ChangedReportingStaysInComponent) {
  // L1 has A, B (5 each). Adding C on the unrelated L2 reports only C (10) and L2.
  MaxMinSolver s;
  const ConstraintId l1 = s.add_constraint(10.0);
  const ConstraintId l2 = s.add_constraint(10.0);
  const VarId a = add(s, {l1});
  const VarId b = add(s, {l1});
  std::vector<VarId> vars;
  std::vector<ConstraintId> cons;
  s.solve(&vars, &cons);
  EXPECT_EQ(std::set<VarId>(vars.begin(), vars.end()), (std::set<VarId>{a, b}));
  EXPECT_EQ(cons, std::vector<ConstraintId>{l1});

  vars.clear();
  cons.clear();
  const VarId c = add(s, {l2});
  s.solve(&vars, &cons);
  EXPECT_EQ(vars, std::vector<VarId>{c});
  EXPECT_EQ(cons, std::vector<ConstraintId>{l2});
  EXPECT_DOUBLE_EQ(s.rate(c), 10.0);

  // Adding D on L1 (level 10 / 3) changes A and B too, but neither C nor L2. L1 stays
  // saturated (usage 3 * 10/3 = 10), so no constraint is reported.
  vars.clear();
  cons.clear();
  const VarId d = add(s, {l1});
  s.solve(&vars, &cons);
  EXPECT_EQ(std::set<VarId>(vars.begin(), vars.end()), (std::set<VarId>{a, b, d}));
  EXPECT_TRUE(cons.empty());
  EXPECT_DOUBLE_EQ(s.rate(d), 10.0 / 3.0);

  // Removing D restores 5 each: A and B change; L1 stays at 10. A solve with nothing
  // dirty reports nothing.
  vars.clear();
  cons.clear();
  s.remove_variable(d);
  s.solve(&vars, &cons);
  EXPECT_EQ(std::set<VarId>(vars.begin(), vars.end()), (std::set<VarId>{a, b}));
  EXPECT_TRUE(cons.empty());
  EXPECT_DOUBLE_EQ(s.rate(a), 5.0);
  vars.clear();
  cons.clear();
  s.solve(&vars, &cons);
  EXPECT_TRUE(vars.empty());
  EXPECT_TRUE(cons.empty());
}

TEST(MaxMinSolver, RecyclesRemovedIds) {
  MaxMinSolver s;
  const ConstraintId l = s.add_constraint(6.0);
  const VarId a = add(s, {l});
  const VarId b = add(s, {l});
  EXPECT_EQ(s.num_variables(), 2u);
  s.remove_variable(a);
  EXPECT_EQ(s.num_variables(), 1u);
  const VarId c = add(s, {l}, 2.0);
  EXPECT_EQ(c, a);
  // Level 6 / (1 + 2) = 2: B = 2, C = 4.
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate(b), 2.0);
  EXPECT_DOUBLE_EQ(s.rate(c), 4.0);
  EXPECT_EQ(s.num_constraints(), 1u);
}

struct Flow {
  std::vector<ConstraintId> cons;
  double weight;
  double bound;
};

Flow random_flow(std::mt19937& rng, int num_cons, double bounded_share = 0.2) {
  std::uniform_int_distribution<int> ncons(1, 4);
  std::uniform_int_distribution<int> pick(0, num_cons - 1);
  std::uniform_int_distribution<int> weight(1, 4);
  std::uniform_real_distribution<double> bound(0.5, 60.0);
  std::bernoulli_distribution bounded(bounded_share);
  Flow f;
  // Repeats are left in on purpose: they must count once.
  for (int i = ncons(rng); i > 0; --i) f.cons.push_back(static_cast<ConstraintId>(pick(rng)));
  f.weight = 0.5 * weight(rng);
  f.bound = bounded(rng) ? bound(rng) : kInf;
  return f;
}

double random_capacity(std::mt19937& rng) {
  std::bernoulli_distribution zero(0.05);
  std::uniform_real_distribution<double> cap(1.0, 100.0);
  return zero(rng) ? 0.0 : cap(rng);
}

// Max-min optimality certificate: feasible, and each variable is at its bound or crosses
// a saturated constraint on which its rate/weight is maximal.
void expect_max_min_fair(const MaxMinSolver& s, const std::map<VarId, Flow>& flows,
                         const std::vector<double>& caps) {
  constexpr double kTol = 1e-9;
  std::vector<double> sums(caps.size(), 0.0);
  std::vector<double> max_level(caps.size(), 0.0);
  for (const auto& [id, f] : flows) {
    const double x = s.rate(id);
    EXPECT_GE(x, 0.0);
    EXPECT_LE(x, f.bound * (1 + kTol));
    for (const ConstraintId c : std::set<ConstraintId>(f.cons.begin(), f.cons.end())) {
      sums[c] += x;
      max_level[c] = std::max(max_level[c], x / f.weight);
    }
  }
  for (size_t c = 0; c < caps.size(); ++c) {
    EXPECT_LE(s.usage(static_cast<ConstraintId>(c)), caps[c] * (1 + kTol) + 1e-12) << c;
    EXPECT_TRUE(near(s.usage(static_cast<ConstraintId>(c)), sums[c])) << c;
  }
  for (const auto& [id, f] : flows) {
    const double x = s.rate(id);
    bool justified = x >= f.bound * (1 - kTol);
    for (const ConstraintId c : f.cons) {
      const bool saturated = s.usage(c) >= caps[c] * (1 - kTol) - 1e-12;
      if (saturated && x / f.weight >= max_level[c] * (1 - kTol) - 1e-12) justified = true;
    }
    EXPECT_TRUE(justified) << "variable " << id << " could be raised";
  }
}

void check_random_instances(uint32_t seed, int instances, int num_cons, int num_flows,
                            double bounded_share) {
  std::mt19937 rng(seed);
  for (int instance = 0; instance < instances; ++instance) {
    MaxMinSolver s;
    std::vector<double> caps;
    for (int c = 0; c < num_cons; ++c) {
      caps.push_back(random_capacity(rng));
      s.add_constraint(caps.back());
    }
    std::map<VarId, Flow> flows;
    for (int i = 0; i < num_flows; ++i) {
      Flow f = random_flow(rng, num_cons, bounded_share);
      flows[s.add_variable(f.cons, f.weight, f.bound)] = f;
    }
    s.solve();
    expect_max_min_fair(s, flows, caps);
  }
}

TEST(MaxMinSolver, RandomInstancesAreMaxMinFair) { check_random_instances(12345, 30, 20, 60, 0.2); }

// Large heaps with many bounded variables exercise removals from the middle of the heap.
TEST(MaxMinSolver, LargeRandomInstancesAreMaxMinFair) {
  check_random_instances(777, 5, 200, 600, 0.5);
}

TEST(MaxMinSolver, SameCallsGiveBitIdenticalResults) {
  auto run = [] {
    std::mt19937 rng(99);
    MaxMinSolver s;
    for (int c = 0; c < 10; ++c) s.add_constraint(random_capacity(rng));
    std::vector<VarId> ids;
    std::vector<double> rates;
    for (int i = 0; i < 50; ++i) {
      const Flow f = random_flow(rng, 10);
      ids.push_back(s.add_variable(f.cons, f.weight, f.bound));
      if (i % 3 == 0) {
        s.remove_variable(ids[ids.size() / 2]);
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(ids.size() / 2));
      }
      s.solve();
      for (const VarId v : ids) rates.push_back(s.rate(v));
    }
    return rates;
  };
  EXPECT_EQ(run(), run());
}

// Random additions, removals and capacity changes, one to three between solves, with or
// without the LOCAL CHANGES shortcuts; after each solve the incremental result must match
// a solver built from scratch, be max-min fair, and report exactly the variables whose
// rate moved (plus the new ones). Returns how many solves the shortcuts settled without
// filling and how many by solving their affected set.
struct Settled {
  uint64_t without_filling = 0;
  uint64_t affected_set = 0;
};
Settled check_incremental(bool local_changes, uint32_t seed, uint32_t kCons) {
  std::mt19937 rng(seed);
  MaxMinSolver s;
  s.set_local_changes(local_changes);
  std::vector<double> caps;
  for (uint32_t c = 0; c < kCons; ++c) {
    caps.push_back(random_capacity(rng));
    s.add_constraint(caps.back());
  }
  std::map<VarId, Flow> flows;
  for (int i = 0; i < 25; ++i) {
    Flow f = random_flow(rng, static_cast<int>(kCons));
    flows[s.add_variable(f.cons, f.weight, f.bound)] = f;
  }
  s.solve();
  std::uniform_int_distribution<int> op(0, 99);
  std::uniform_int_distribution<int> batch(1, 3);
  std::uniform_int_distribution<int> pick_con(0, static_cast<int>(kCons) - 1);
  int ops = 0;
  while (ops < 200) {
    std::map<VarId, double> before;
    for (const auto& [id, f] : flows) before[id] = s.rate(id);
    std::vector<double> usage_before;
    for (ConstraintId c = 0; c < kCons; ++c) usage_before.push_back(s.usage(c));
    std::set<VarId> added;
    for (int i = batch(rng); i > 0; --i, ++ops) {
      const int o = op(rng);
      if (o < 50 || flows.empty()) {
        Flow f = random_flow(rng, static_cast<int>(kCons));
        const VarId id = s.add_variable(f.cons, f.weight, f.bound);
        flows[id] = f;
        added.insert(id);
      } else if (o < 85) {
        auto it = flows.begin();
        std::advance(it, std::uniform_int_distribution<size_t>(0, flows.size() - 1)(rng));
        s.remove_variable(it->first);
        added.erase(it->first);
        before.erase(it->first);
        flows.erase(it);
      } else {
        const int c = pick_con(rng);
        caps[c] = random_capacity(rng);
        s.set_capacity(static_cast<ConstraintId>(c), caps[c]);
      }
    }
    std::vector<VarId> changed;
    std::vector<ConstraintId> changed_cons;
    s.solve(&changed, &changed_cons);
    EXPECT_EQ(s.num_variables(), flows.size());

    MaxMinSolver fresh;
    for (const double cap : caps) fresh.add_constraint(cap);
    std::map<VarId, VarId> fresh_id;
    for (const auto& [id, f] : flows) fresh_id[id] = fresh.add_variable(f.cons, f.weight, f.bound);
    fresh.solve();
    for (const auto& [id, f] : flows) {
      EXPECT_TRUE(near(s.rate(id), fresh.rate(fresh_id[id])))
          << "op " << ops << " var " << id << ": " << s.rate(id) << " vs "
          << fresh.rate(fresh_id[id]);
    }
    for (ConstraintId c = 0; c < kCons; ++c) EXPECT_TRUE(near(s.usage(c), fresh.usage(c)));
    expect_max_min_fair(s, flows, caps);

    const std::set<VarId> reported(changed.begin(), changed.end());
    EXPECT_EQ(reported.size(), changed.size()) << "duplicate report";
    for (const auto& [id, f] : flows) {
      const bool moved = added.count(id) > 0 || s.rate(id) != before.at(id);
      EXPECT_EQ(reported.count(id) > 0, moved) << "op " << ops << " var " << id;
    }
    const std::set<ConstraintId> reported_cons(changed_cons.begin(), changed_cons.end());
    EXPECT_EQ(reported_cons.size(), changed_cons.size()) << "duplicate report";
    for (ConstraintId c = 0; c < kCons; ++c) {
      if (reported_cons.count(c) > 0) {
        EXPECT_NE(s.usage(c), usage_before[c]) << "op " << ops << " constraint " << c;
      } else {
        EXPECT_TRUE(near(s.usage(c), usage_before[c], 1e-12)) << "op " << ops << " con " << c;
      }
    }
  }
  return {s.solves_without_filling(), s.affected_set_solves()};
}

TEST(MaxMinSolver, IncrementalMatchesFromScratch) {
  const Settled settled = check_incremental(false, 2024, 30);
  EXPECT_EQ(settled.without_filling, 0u);
  EXPECT_EQ(settled.affected_set, 0u);
}

// The shortcuts settle some of the solves (a few in a hundred here without filling, most
// of the rest by their affected set) and change no rate beyond rounding: the same
// comparison with a fresh solver holds.
TEST(MaxMinSolver, IncrementalWithLocalChangesMatchesFromScratch) {
  for (const auto& [seed, constraints] : {std::pair<uint32_t, uint32_t>{2024, 30}, {7, 80}}) {
    const Settled settled = check_incremental(true, seed, constraints);
    EXPECT_GT(settled.without_filling, 2u) << seed;
    EXPECT_GT(settled.affected_set, 10u) << seed;
  }
}

}  // namespace
}  // namespace dtsim
