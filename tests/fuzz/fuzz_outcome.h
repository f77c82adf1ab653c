// What a fuzz target does with an exception: bad input (InputError) and a time past the
// clock's range (ClockRangeError) are the clear errors a user gets; anything else escaping
// the library (an internal invariant, std::bad_alloc, a library's raw exception) is a bug,
// printed and turned into an abort so that libFuzzer records the input as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "sim/check.h"
#include "sim/clock_range.h"
#include "sim/input_error.h"

namespace dtsim::fuzz {

// Runs `body`; returns normally for an accepted or a cleanly refused input.
template <typename Body>
void expect_clean_outcome(Body&& body) {
  try {
    body();
  } catch (const InputError&) {
  } catch (const ClockRangeError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtsim fuzz: an exception escaped as a crash: %s\n", e.what());
    std::abort();
  }
}

}  // namespace dtsim::fuzz
