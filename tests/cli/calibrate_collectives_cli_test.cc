// End to end: `dtsim calibrate --collectives` times MPI's collectives on two ranks of this
// machine, `dtsim costs show` prints the fit against every point, and `dtsim run --costs`
// prices the scenario's communication with the measured link instead of the catalog's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

TEST(CalibrateCollectives, MeasuresTheLinkAndRunPricesCommunicationWithIt) {
#ifndef DTSIM_HAVE_MPI
  GTEST_SKIP() << "this dtsim was configured without MPI";
#endif
  const fs::path dir = scratch("calibrate_collectives_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "links.json").string();
  const Result r = dtsim("calibrate --collectives --max-message 256KiB --out " + db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("intra_node links over Open MPI"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("inter-node links keep the catalog's figures"), std::string::npos);
  const auto doc = nlohmann::json::parse(slurp(db));
  ASSERT_EQ(doc["links"].size(), 1u);
  EXPECT_EQ(doc["links"][0]["ranks"], 2);
  EXPECT_EQ(doc["links"][0]["collectives"].size(), 6u);

  const Result show = dtsim("costs show " + db);
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("intra_node links, Open MPI"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("send_recv            256KiB"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("measured calls, every other inner size held out"), std::string::npos)
      << show.output;

  const std::string scenario = example("small-transformer-2xcpu.json");
  const fs::path measured_out = dir / "measured";
  const Result run =
      dtsim("run " + scenario + " --costs " + db + " --no-timing --out " + measured_out.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("links           CPU intra_node measured (Open MPI"), std::string::npos)
      << run.output;
  const auto s = nlohmann::json::parse(slurp(measured_out / "summary.json"));
  ASSERT_EQ(s["measured_links"].size(), 1u);
  EXPECT_EQ(s["measured_links"][0]["device"], "CPU");
  EXPECT_DOUBLE_EQ(s["measured_links"][0]["bandwidth_bytes_per_s"].get<double>(),
                   doc["links"][0]["fit"]["bandwidth_bytes_per_s"].get<double>());
  // The gradients' all-reduces over the two ranks are priced by the measured calls
  // (beyond 256 KiB: extrapolated), none by the network model.
  const auto& calls = s["collective_sources"];
  EXPECT_GT(calls["extrapolated"].get<int>(), 0) << calls.dump();
  EXPECT_EQ(calls["network_model"], 0) << calls.dump();
  EXPECT_NE(run.output.find("by the database's measurements"), std::string::npos) << run.output;
  // The kernels are not in this database: the roofline prices them, and only the
  // gradients' all-reduce changes against the catalog's run.
  const fs::path catalog_out = dir / "catalog";
  ASSERT_EQ(
      dtsim("run " + scenario + " --no-timing --quiet --out " + catalog_out.string()).exit_code, 0);
  const auto c = nlohmann::json::parse(slurp(catalog_out / "summary.json"));
  EXPECT_FALSE(c.contains("measured_links"));
  EXPECT_EQ(s["cost_sources"], c["cost_sources"]);
  EXPECT_NE(s["simulated_time_s"], c["simulated_time_s"]);
}

}  // namespace
