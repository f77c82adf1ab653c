// `dtsim run --critical-path`: the chain of tasks that set the step's end, printed and
// written to critical_path.csv; it spans the whole step.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_helpers.h"

namespace cli_test {
namespace {

TEST(CriticalPathCli, SpansTheStepAndEndsWithItsLastTask) {
  const fs::path out = scratch("critical_path");
  const Result r = dtsim("run " + example("llama3-70b-64xH100.json") +
                         " --no-timing --critical-path --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("critical path: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("critical_path.csv"), std::string::npos);
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  const double step = summary["training"]["iteration_time_s"].get<double>();
  std::istringstream csv(slurp(out / "critical_path.csv"));
  std::string line, last;
  std::getline(csv, line);
  EXPECT_EQ(line, "step,task,rank,stream,kind,name,start_s,end_s,link");
  std::getline(csv, line);
  EXPECT_NE(line.find(",first"), std::string::npos) << line;  // the first step follows nothing
  int rows = 1;
  while (std::getline(csv, line)) {
    last = line;
    ++rows;
    EXPECT_EQ(line.find(",first"), std::string::npos) << line;
  }
  EXPECT_GT(rows, 10);
  // The last step ends when the step does: end_s is the second-to-last field.
  const size_t link = last.rfind(',');
  const size_t end = last.rfind(',', link - 1);
  EXPECT_NEAR(std::stod(last.substr(end + 1, link - end - 1)), step, 1e-9) << last;
}

}  // namespace
}  // namespace cli_test
