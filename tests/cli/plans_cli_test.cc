// `dtsim plans`: every (TP, PP) plan of a training scenario, simulated, with the ones out of
// memory, the ones that do not apply and the fastest that fits.
#include <gtest/gtest.h>

#include "tests/cli/cli_helpers.h"

namespace cli_test {
namespace {

TEST(Plans, ListsEveryPlanAndTheFastestThatFits) {
  const fs::path dir = scratch("plans");
  const Result r = dtsim("plans " + example("llama3-70b-64xH100.json") +
                         " --set training.global_batch=16 --csv " + (dir / "plans.csv").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("22 plans of llama3-70b-64xH100 on 64 ranks (8 GPUs per node)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("out of memory on"), std::string::npos);
  EXPECT_NE(r.output.find("not valid: /training/global_batch"), std::string::npos);
  EXPECT_NE(r.output.find("fastest that fits"), std::string::npos);
  const std::string csv = slurp(dir / "plans.csv");
  EXPECT_EQ(
      csv.rfind("tp,pp,dp,valid,step_s,tokens_per_s,peak_memory_bytes,oom_ranks,best,problem\n", 0),
      0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 23);
  // Exactly one best row: the ninth field is 1 (the first nine hold no commas; the
  // problem, last, may).
  int best = 0;
  std::istringstream rows(csv);
  std::string line;
  std::getline(rows, line);  // header
  while (std::getline(rows, line)) {
    size_t at = 0;
    for (int field = 0; field < 8; ++field) at = line.find(',', at) + 1;
    best += line.compare(at, 2, "1,") == 0;
  }
  EXPECT_EQ(best, 1) << csv;
}

TEST(Plans, AScenarioThatIsNotTrainingIsBadInput) {
  const Result r = dtsim("plans " + example("allreduce-8xH100-nvswitch.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("needs a training scenario"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cli_test
