// A cost database's measured link classes put in place of the catalog's figures: the
// intra-node links of the nodes whose device the database prices, and that device's
// collective protocol, so that lowering (the choice of `auto` algorithms) and simulation
// both see what the collective library was measured to do.
#pragma once

#include <string>
#include <vector>

#include "calibration/link_calibration.h"
#include "models/scenario_result.h"
#include "scenarios/scenario.h"

namespace dtsim {

// For every node group of `device` (DeviceSpec::name) with more than one device: the
// intra-node link (NVLink, or on a CPU node the PCIe tree that stands for shared memory)
// runs at the fit's bandwidth with efficiency 1 and no latency of its own, and the device's
// collective protocol becomes one protocol with the fit's per-call and per-hop latency at
// the full rate (the network step stays the catalog's: one machine cannot measure it).
// Rebuilds the scenario's cluster. Returns what it applied (nothing when `links` has no
// intra-node class or no node group has the device).
std::vector<MeasuredLinkClass> use_measured_links(
    Scenario& scenario, const std::vector<calibration::LinkCalibration>& links,
    const std::string& device);

}  // namespace dtsim
