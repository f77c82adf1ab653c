// DTSIM_CHECK: an always-on invariant check that aborts with a message. Never used for
// errors reachable from user input (those are reported by the loader).
#pragma once

#include <cstdio>
#include <cstdlib>

#define DTSIM_CHECK(cond, msg)                                                      \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "dtsim: internal error at %s:%d: %s (%s)\n", __FILE__, \
                   __LINE__, msg, #cond);                                           \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)
