// check agrees with run at the edges of what the engine represents: inputs that aborted in
// the max-min solver (a 1e308 Tbps NIC), in the engine ("event scheduled in the past": a
// 1 bps WAN, a 2,000,000 h latency) or stalled (an oversubscription of 1e18) are now bad
// input at their pointer, or a run that stops with an error naming what would outlast the
// clock; never an internal error.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

const std::string kGeo = example("geo-2regions-allreduce.json");

void expect_no_internal_error(const Result& r) {
  EXPECT_EQ(r.output.find("this is a bug in dtsim"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("event scheduled in the past"), std::string::npos) << r.output;
}

TEST(CliBounds, AnInfiniteBandwidthIsBadInputAtItsPointer) {
  const std::string set = " --set cluster.regions.0.nodes.0.nic_bandwidth=1e308Tbps";
  const std::string run = "run --quiet --out " + scratch("bounds_bw").string() + " ";
  for (const std::string& command : {std::string("check "), run}) {
    const Result r = dtsim(command + kGeo + set);
    EXPECT_EQ(r.exit_code, 2) << command << r.output;
    EXPECT_NE(r.output.find("/cluster/regions/0/nodes/0/nic_bandwidth: \"1e308Tbps\" is not a "
                            "bandwidth dtsim simulates: at most 1e18 B/s"),
              std::string::npos)
        << r.output;
    expect_no_internal_error(r);
  }
}

TEST(CliBounds, AnHourLongLatencyBeyondTheBoundIsBadInput) {
  const Result r = dtsim("check " + kGeo + " --set cluster.wan.0.latency=2000000h");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/cluster/wan/0/latency: \"2000000h\" is not a duration dtsim "
                          "simulates: at most 1e6 s"),
            std::string::npos)
      << r.output;
}

TEST(CliBounds, AHugeOversubscriptionIsBadInput) {
  const Result r = dtsim("check " + example("allreduce-1024xH100-fattree.json") +
                         " --set cluster.fabric.oversubscription=1e18");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/cluster/fabric/oversubscription: 1e+18 is out of range (expected a "
                          "number in [1, 1000])"),
            std::string::npos)
      << r.output;
}

TEST(CliBounds, ARunPastTheClockStopsWithAnErrorNamingTheTransfer) {
  // A 1 bps WAN is valid input: check accepts it, and the run says what would outlast the
  // clock, in both network models.
  const std::string set = " --set cluster.wan.0.bandwidth=1bps";
  EXPECT_EQ(dtsim("check " + kGeo + set).exit_code, 0);
  for (const char* model : {"flow", "analytical"}) {
    const Result r = dtsim("run " + kGeo + set + " --set simulation.network_model=" + model +
                           " --quiet --out " + scratch("bounds_clock").string());
    EXPECT_EQ(r.exit_code, 1) << model << r.output;
    EXPECT_NE(r.output.find("past the clock's range (about 292 years)"), std::string::npos)
        << model << r.output;
    expect_no_internal_error(r);
    EXPECT_FALSE(fs::exists(scratch("bounds_clock") / "summary.json"));
  }
}

}  // namespace
