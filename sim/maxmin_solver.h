// Incremental weighted max-min fair sharing of capacities among variables (flows).
//
// PROBLEM. Constraints c (links) have capacities C_c. Variables v (flows) each use a set
// of constraints, have a weight w_v > 0 and an optional upper bound b_v. An allocation
// x_v is max-min fair when it is feasible (for every c: sum of x_v over v using c <= C_c;
// x_v <= b_v) and no x_v / w_v can be raised without lowering some x_u / w_u that is
// already no larger.
//
// ALGORITHM. Progressive filling (Bertsekas & Gallager, "Data Networks", 6.5.2): raise
// every unfixed variable's x_v / w_v together; the first constraint to saturate, at
// level r_c = remaining_c / (sum of unfixed weights on c), fixes all its unfixed variables
// at x_v = w_v * r_c; a bound b_v fixes v alone at level b_v / w_v. Repeat until every
// variable is fixed. Levels are kept in a min-heap, so a component of V variables and E
// (variable, constraint) incidences costs O((V + E) log E).
//
// INCREMENTALITY. The allocation of a variable depends only on the connected component
// of the variable-constraint graph that holds it. Adding or removing variables and
// changing capacities marks constraints dirty; solve() recomputes only the components
// that contain a dirty constraint, and reports which variables and constraints changed.
// This is what keeps a 4,096-flow collective step cheap when one flow joins or leaves.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace dtsim {

class MaxMinSolver {
 public:
  using VarId = uint32_t;
  using ConstraintId = uint32_t;
  static constexpr double kUnbounded = std::numeric_limits<double>::infinity();

  ConstraintId add_constraint(double capacity);
  void set_capacity(ConstraintId c, double capacity);

  // Constraints may repeat in `constraints`; a repeated constraint counts once.
  VarId add_variable(std::span<const ConstraintId> constraints, double weight = 1.0,
                     double bound = kUnbounded);
  void remove_variable(VarId v);

  // Recomputes the components touched since the last call. Appends to the vectors (when
  // not null) the variables whose rate changed and the constraints whose usage changed.
  void solve(std::vector<VarId>* changed_variables = nullptr,
             std::vector<ConstraintId>* changed_constraints = nullptr);

  double rate(VarId v) const;
  double usage(ConstraintId c) const;  // sum of the rates of the variables using c
  double capacity(ConstraintId c) const;
  size_t num_variables() const;  // variables currently present
  size_t num_constraints() const;
  bool dirty() const;

 private:
  // (private state: chosen by the implementation)
};

}  // namespace dtsim
