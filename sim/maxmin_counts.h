// How a run's max-min solves were settled: what the flow model reports.
#pragma once

#include <cstdint>

namespace dtsim {

// Every solve with something to do is counted once, in exactly one of without_filling,
// affected_sets and components (MaxMinSolver's LOCAL CHANGES, AFFECTED SET, and the
// changed components solved whole).
struct MaxMinSolveCounts {
  uint64_t solves = 0;
  uint64_t without_filling = 0;
  uint64_t affected_sets = 0;
  uint64_t components = 0;
  // Of the components solved whole, those whose affected set was gathered first and given
  // up (more than 4,096 variables, or not settled in 8 rounds of filling): work spent too.
  uint64_t affected_sets_given_up = 0;
  uint64_t component_variables = 0;  // the variables the components solved whole held, summed

  // Another run's counts added in (a local-SGD run's local step beside its step).
  MaxMinSolveCounts& operator+=(const MaxMinSolveCounts& o) {
    solves += o.solves;
    without_filling += o.without_filling;
    affected_sets += o.affected_sets;
    components += o.components;
    affected_sets_given_up += o.affected_sets_given_up;
    component_variables += o.component_variables;
    return *this;
  }
};

}  // namespace dtsim
