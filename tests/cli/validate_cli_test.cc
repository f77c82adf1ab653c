// dtsim validate's arguments that are refused before anything runs: --rounds outside the
// suite, or below one round.
#include <gtest/gtest.h>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

TEST(CliValidate, RoundsBelongToTheSuiteAndAreAtLeastOne) {
  const std::string suite = std::string(DTSIM_SOURCE_DIR) + "/scenarios/validation/real";
  const fs::path out = scratch("validate_rounds");
  const Result zero = dtsim("validate " + suite + " --rounds 0 --out " + out.string());
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("--rounds"), std::string::npos) << zero.output;
  EXPECT_NE(zero.output.find("expected a whole number of at least 1, got 0"), std::string::npos)
      << zero.output;
  const Result one_case =
      dtsim("validate " + suite + "/dp-mlp.json --rounds 3 --out " + out.string());
  EXPECT_EQ(one_case.exit_code, 2) << one_case.output;
  EXPECT_NE(one_case.output.find("name a folder of cases, not a scenario"), std::string::npos)
      << one_case.output;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
