// Alpha-beta figures of a typical cluster, for the collective estimate tests.
#pragma once

#include "sim/collectives/planner.h"

namespace dtsim::testing {

// NVLink-class inside a node, 200 Gb/s-class between nodes, a slow WAN between regions.
inline AlphaBeta cluster_figures() {
  AlphaBeta ab;
  ab.intra_node_alpha = Duration::us(1);
  ab.intra_node_bw = Bandwidth::gb_per_s(200);
  ab.inter_node_alpha = Duration::us(5);
  ab.inter_node_bw = Bandwidth::gb_per_s(25);
  ab.inter_region_alpha = Duration::ms(20);
  ab.inter_region_bw = Bandwidth::gbps(10);
  return ab;
}

}  // namespace dtsim::testing
