// Rewriting the cluster specification's intra-node figures from a measured link class and
// rebuilding the cluster from it; the catalog's device spec is copied, never changed.
#include "runner/measured_links.h"

#include <memory>

namespace dtsim {

namespace {

const calibration::LinkCalibration* intra_node_class(
    const std::vector<calibration::LinkCalibration>& links) {
  for (const calibration::LinkCalibration& l : links) {
    if (l.link_class == "intra_node") return &l;
  }
  return nullptr;
}

// The device with the measured library's protocol: one protocol, at the full rate.
std::unique_ptr<DeviceSpec> with_measured_protocol(const DeviceSpec& device,
                                                   const calibration::LinkFit& fit) {
  auto spec = std::make_unique<DeviceSpec>(device);
  ProtocolTable& table = spec->efficiency.collective_protocols;
  const ProtocolCosts catalog = costs_of(table, CollectiveProtocol::kSimple);
  table = ProtocolTable{};
  table[static_cast<size_t>(CollectiveProtocol::kSimple)] =
      ProtocolCosts{fit.base, fit.hop, catalog.network_step, 1.0};
  spec->efficiency.nvlink_efficiency = 1.0;
  spec->efficiency.pcie_efficiency = 1.0;
  return spec;
}

}  // namespace

std::vector<MeasuredLinkClass> use_measured_links(
    Scenario& scenario, const std::vector<calibration::LinkCalibration>& links,
    const std::string& device) {
  const calibration::LinkCalibration* measured = intra_node_class(links);
  if (measured == nullptr) return {};
  const calibration::LinkFit& fit = measured->fit;
  std::unique_ptr<DeviceSpec> spec;
  for (RegionSpec& region : scenario.cluster_spec.regions) {
    for (NodeGroupSpec& g : region.node_groups) {
      if (g.device == nullptr || g.device->name != device || g.devices_per_node < 2) continue;
      if (!spec) spec = with_measured_protocol(*g.device, fit);
      g.device = spec.get();
      if (g.intra == IntraNodeKind::kPcie) {
        g.pcie_bandwidth = fit.bandwidth;
        g.pcie_latency = Duration::zero();
        g.pcie_efficiency = 1.0;
      } else {
        g.intra_bandwidth = fit.bandwidth;
        g.intra_latency = Duration::zero();
        g.intra_efficiency = 1.0;
      }
    }
  }
  if (!spec) return {};
  // The old cluster's specs stay owned: other node groups may still point at them.
  Cluster rebuilt = build_cluster(scenario.cluster_spec);
  rebuilt.owned_specs = std::move(scenario.cluster.owned_specs);
  rebuilt.owned_specs.push_back(std::move(spec));
  scenario.cluster = std::move(rebuilt);
  return {MeasuredLinkClass{device, measured->link_class, measured->library, measured->ranks,
                            fit.base, fit.hop, fit.bandwidth, fit.median_error, fit.worst_error}};
}

}  // namespace dtsim
