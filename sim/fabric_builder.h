// Fabric builders: join the NICs of a region's nodes by switches (or torus routers).
#pragma once

#include <string>
#include <vector>

#include "sim/cluster_spec.h"
#include "sim/topology.h"

namespace dtsim {

// The NICs one node exposes to the fabric.
struct FabricNode {
  std::vector<VertexId> nics;
  Bandwidth nic_bandwidth;
  Duration nic_latency;
};

// Adds the fabric's switches and links; returns the top-level vertices (spines, core,
// ...) through which the region reaches its WAN gateway.
std::vector<VertexId> build_fabric(Topology& t, const FabricSpec& spec,
                                   const std::vector<FabricNode>& nodes, const std::string& prefix,
                                   int region);

}  // namespace dtsim
