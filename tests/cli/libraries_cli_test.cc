// What a command loads: OpenBLAS (and its worker threads, which spin at load) only when it
// times or runs a kernel, never for `dtsim run`.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

// `dtsim args`, with glibc's loader naming each file it loads on stderr (LD_DEBUG=files).
Result dtsim_naming_loads(const std::string& args) {
  const Result r =
      run_shell("env -u LD_DEBUG_OUTPUT LD_DEBUG=files " + std::string(DTSIM_BINARY) + " " + args);
  EXPECT_NE(r.output.find("file=libc.so"), std::string::npos)
      << "LD_DEBUG=files named no loads: cannot tell what was loaded\n"
      << r.output;
  return r;
}

TEST(CliLibraries, ARunNeverLoadsOpenBlas) {
  const fs::path out = scratch("libraries_run");
  const Result r = dtsim_naming_loads("run " + example("small-transformer-2xcpu.json") +
                                      " --quiet --no-timing --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("libopenblas"), std::string::npos) << r.output;
}

TEST(CliLibraries, TimingAKernelLoadsOpenBlas) {
  // The control: the same check sees OpenBLAS where a command needs it.
  const fs::path dir = scratch("libraries_calibrate");
  fs::create_directories(dir);
  std::ofstream(dir / "ops.json") << R"([{"name": "s", "kind": "softmax", "storage": "fp32",
    "math": "fp32", "rows_width": [64, 64], "bytes": 32768}])";
  const Result r = dtsim_naming_loads("calibrate --ops " + (dir / "ops.json").string() +
                                      " --quiet --out " + (dir / "db.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Loaded and started, not only searched for: the loader calls its initializer.
  bool started = false;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("calling init:") != std::string::npos &&
        line.find("libopenblas") != std::string::npos)
      started = true;
  }
  EXPECT_TRUE(started) << r.output;
}

}  // namespace
