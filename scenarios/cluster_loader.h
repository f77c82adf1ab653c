// Reads and validates the `cluster` section of a scenario into a ClusterSpec that
// build_cluster can build without tripping any of its internal checks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/json_reader.h"
#include "sim/cluster_spec.h"
#include "sim/device.h"

namespace dtsim::scenario_detail {

// The largest cluster a scenario may describe, in ranks: beyond this the topology alone
// would take gigabytes, which is a typo far more often than an intent.
inline constexpr int64_t kMaxRanks = int64_t{1} << 20;

struct LoadedCluster {
  ClusterSpec spec;
  // Custom devices (`cluster.devices`); the node groups of `spec` point at them.
  std::vector<std::unique_ptr<DeviceSpec>> owned_specs;
};

// Custom devices by name. A definition with errors maps to nullptr, so that node groups
// naming it do not add "unknown device" to the errors already reported.
using DeviceTable = std::map<std::string, const DeviceSpec*, std::less<>>;

// Reads `cluster.devices` into `owned` and `table`.
void read_custom_devices(const json& devices, const std::string& pointer, Diagnostics& d,
                         DeviceTable& table, std::vector<std::unique_ptr<DeviceSpec>>& owned);

// Reads a region's `fabric` (nullptr when absent) for `nodes` nodes (nullopt when the node
// groups have errors, which skips the checks that need the count).
void read_fabric(const json* value, const std::string& pointer, std::optional<int64_t> nodes,
                 Diagnostics& d, FabricSpec& out);

// nullopt when the section has errors, each reported to `d`.
std::optional<LoadedCluster> read_cluster(const json& cluster, const std::string& pointer,
                                          Diagnostics& d);

}  // namespace dtsim::scenario_detail
