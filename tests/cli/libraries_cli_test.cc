// What a simulation loads: OpenBLAS (and its worker threads, which spin at load) only when a
// command runs a kernel, never for `dtsim run`.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

TEST(CliLibraries, ARunNeverLoadsOpenBlas) {
  // glibc's loader names each file it loads on stderr under LD_DEBUG=files.
  const fs::path out = scratch("libraries_run");
  const Result r = run_shell("LD_DEBUG=files " + std::string(DTSIM_BINARY) + " run " +
                             example("small-transformer-2xcpu.json") +
                             " --quiet --no-timing --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("file=libstdc++"), std::string::npos)
      << "LD_DEBUG=files printed no loads: cannot tell what was loaded\n"
      << r.output;
  EXPECT_EQ(r.output.find("libopenblas"), std::string::npos) << r.output;
}

}  // namespace
