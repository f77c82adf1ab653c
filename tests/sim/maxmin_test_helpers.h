// Adding a variable to a MaxMinSolver from a brace list of constraints, for hand-worked tests.
#pragma once

#include <initializer_list>
#include <vector>

#include "sim/maxmin_solver.h"

namespace dtsim::testing {

inline MaxMinSolver::VarId add(MaxMinSolver& s,
                               std::initializer_list<MaxMinSolver::ConstraintId> cons,
                               double weight = 1.0) {
  const std::vector<MaxMinSolver::ConstraintId> v(cons);
  return s.add_variable(v, weight);
}

}  // namespace dtsim::testing
