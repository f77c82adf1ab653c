// Small cluster specs for tests, built in code (the loader has its own tests), the tasks
// the runtime's tests build graphs of, and an observer of when each task ended.
#pragma once

#include <utility>
#include <vector>

#include "sim/cluster_spec.h"
#include "sim/device_catalog.h"
#include "sim/observer.h"
#include "sim/task_graph.h"

namespace dtsim::testing {

inline NodeGroupSpec node_group(int count, int devices_per_node, const char* device = "H100",
                                int nics = 1, double nic_gbps = 400) {
  NodeGroupSpec g;
  g.count = count;
  g.device = find_builtin_device(device);
  g.devices_per_node = devices_per_node;
  g.intra = g.device->intra_node_bandwidth.bytes_per_second() > 0 ? IntraNodeKind::kNvSwitch
                                                                  : IntraNodeKind::kPcie;
  g.intra_bandwidth = g.device->intra_node_bandwidth;
  g.pcie_bandwidth = g.device->pcie_bandwidth;
  g.nics = nics;
  g.nic_bandwidth = Bandwidth::gbps(nic_gbps);
  return g;
}

inline ClusterSpec one_region(NodeGroupSpec nodes, FabricSpec fabric) {
  ClusterSpec c;
  RegionSpec r;
  r.name = "r0";
  r.node_groups.push_back(nodes);
  r.fabric = fabric;
  c.regions.push_back(r);
  return c;
}

inline FabricSpec fabric(FabricKind kind) {
  FabricSpec f;
  f.kind = kind;
  return f;
}

// 8 nodes of 4 A100s with 2 NICs of 200 Gbps each on a fat tree of 2 nodes per leaf and 2
// spines, leaf uplinks oversubscribed 2:1: flows inside a node have their ports to
// themselves, flows across nodes meet on the uplinks.
inline Cluster small_oversubscribed_fat_tree() {
  FabricSpec f = fabric(FabricKind::kFatTree);
  f.nodes_per_leaf = 2;
  f.spines = 2;
  f.oversubscription = 2;
  return build_cluster(one_region(node_group(8, 4, "A100-80GB", 2, 200), f));
}

// Two regions named `names`, each with `nodes` on a single switch and an
// 800 Gbps gateway, joined by one WAN link.
inline ClusterSpec two_regions(std::pair<const char*, const char*> names, NodeGroupSpec nodes,
                               Bandwidth wan, Duration wan_latency) {
  ClusterSpec spec;
  for (const char* name : {names.first, names.second}) {
    RegionSpec r;
    r.name = name;
    r.node_groups.push_back(nodes);
    r.fabric = fabric(FabricKind::kSingleSwitch);
    r.gateway_bandwidth = Bandwidth::gbps(800);
    spec.regions.push_back(r);
  }
  spec.wan.push_back(WanLinkSpec{names.first, names.second, wan, wan_latency});
  return spec;
}

// One node of two H100s joined by NVLink.
inline Cluster two_h100() {
  return build_cluster(one_region(node_group(1, 2, "H100", 2), fabric(FabricKind::kNone)));
}

// A compute task of a fixed duration.
inline Task compute(int rank, uint16_t stream, Duration d, std::vector<TaskId> deps = {}) {
  Task t;
  t.kind = TaskKind::kCompute;
  t.rank = rank;
  t.stream = stream;
  t.name = "compute";
  t.duration = d;
  t.deps = std::move(deps);
  return t;
}

// Each task's end time, by task id.
struct TaskEnds : SimObserver {
  void on_task(const TaskRecord& r) override {
    if (r.task >= end.size()) end.resize(r.task + 1);
    end[r.task] = r.end;
  }
  std::vector<Time> end;
};

}  // namespace dtsim::testing
