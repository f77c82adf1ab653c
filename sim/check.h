// DTSIM_CHECK: an always-on invariant check. A broken invariant is a bug in dtsim, never an
// error reachable from user input (the loader and lowering report those); it throws
// InternalError so that a host process (the GUI, a sweep's worker) survives the failed
// call, and the CLI turns it into exit code 1.
#pragma once

#include <stdexcept>
#include <string>

namespace dtsim {

class InternalError : public std::logic_error {
 public:
  InternalError(const char* file, int line, const char* message, const char* condition)
      : std::logic_error(std::string("internal error at ") + file + ":" + std::to_string(line) +
                         ": " + message + " (" + condition + ")") {}
};

}  // namespace dtsim

#define DTSIM_CHECK(cond, msg)                                                 \
  do {                                                                         \
    if (!(cond)) throw ::dtsim::InternalError(__FILE__, __LINE__, msg, #cond); \
  } while (0)
