// The paths an emulated network shapes: from the simulator's route between two ranks'
// devices, its narrowest link and its summed latency.
#include <gtest/gtest.h>

#include "runner/emulated_network.h"
#include "scenarios/loader.h"

namespace dtsim {
namespace {

TEST(EmulatedPaths, TheGeoCasesPathIsItsWan) {
  const Scenario s = load_scenario_file(std::string(DTSIM_SOURCE_DIR) +
                                        "/scenarios/validation/real/geo-2ranks-100mbit-20ms.json");
  const auto paths = emulated_paths(s.cluster, 2);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].a, 0);
  EXPECT_EQ(paths[0].b, 1);
  EXPECT_DOUBLE_EQ(paths[0].bytes_per_s, 100e6 / 8);
  // The WAN's 20 ms and the few microseconds of the NICs and switches on either side.
  EXPECT_GE(paths[0].latency_s, 0.020);
  EXPECT_LT(paths[0].latency_s, 0.0201);
}

TEST(EmulatedPaths, EveryPairOnce) {
  const Scenario s = load_scenario_file(std::string(DTSIM_SOURCE_DIR) +
                                        "/scenarios/validation/real/dp-transformer.json");
  EXPECT_EQ(emulated_paths(s.cluster, 2).size(), 1u);
  EXPECT_TRUE(emulated_paths(s.cluster, 1).empty());
}

}  // namespace
}  // namespace dtsim
