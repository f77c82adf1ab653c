// The `cluster` section: custom devices, node groups, regions and WAN links (fabrics are in
// fabric_loader.cc), validated so that build_cluster never meets input it assumes away.
#include "scenarios/cluster_loader.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string_view>

#include "sim/device_catalog.h"

namespace dtsim::scenario_detail {

namespace {

constexpr std::string_view kIntraNames[] = {"nvswitch", "nvlink_mesh", "pcie"};
constexpr IntraNodeKind kIntraKinds[] = {IntraNodeKind::kNvSwitch, IntraNodeKind::kNvLinkMesh,
                                         IntraNodeKind::kPcie};
// Generous bounds that real machines stay far below; they keep a typo from building a
// topology that exhausts memory.
constexpr int64_t kMaxDevicesPerNode = 1024;
constexpr int64_t kMaxNics = 64;

struct NodeGroupRead {
  NodeGroupSpec spec;
  std::string pointer;
  std::optional<int64_t> count;  // known even when other keys of the group are wrong
  std::optional<int64_t> devices_per_node;
  bool valid = false;
};

std::string device_list_hint(const DeviceTable& custom) {
  std::string names;
  for (const DeviceSpec& spec : builtin_devices()) names += (names.empty() ? "" : ", ") + spec.name;
  for (const auto& [name, spec] : custom) names += ", " + name;
  return names;
}

const DeviceSpec* lookup_device(const std::string& name, const std::string& pointer,
                                const DeviceTable& custom, Diagnostics& d) {
  if (auto it = custom.find(name); it != custom.end()) return it->second;
  if (const DeviceSpec* spec = find_builtin_device(name)) return spec;
  std::vector<std::string_view> names;
  for (const DeviceSpec& spec : builtin_devices()) names.push_back(spec.name);
  for (const auto& [custom_name, spec] : custom) names.push_back(custom_name);
  const std::string guess = closest_match(name, names);
  d.error(pointer, "unknown device " + in_quotes(name) + " (" +
                       (guess.empty() ? "" : "did you mean \"" + guess + "\"? ") +
                       "expected a catalog device or a cluster.devices name: " +
                       device_list_hint(custom) + ")");
  return nullptr;
}

NodeGroupRead read_node_group(const json& value, const std::string& pointer,
                              const DeviceTable& custom, Diagnostics& d) {
  NodeGroupRead out;
  out.pointer = pointer;
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return out;
  const size_t errors_before = d.count();
  NodeGroupSpec& g = out.spec;

  out.count = o->integer("count", Need::kRequired, 1, kMaxRanks);
  if (out.count) g.count = static_cast<int>(*out.count);
  const DeviceSpec* device = nullptr;
  if (auto name = o->string("device", Need::kRequired,
                            "a catalog device name or a cluster.devices name")) {
    device = lookup_device(*name, o->pointer("device"), custom, d);
  }
  out.devices_per_node = o->integer("devices_per_node", Need::kRequired, 1, kMaxDevicesPerNode);
  if (out.devices_per_node) g.devices_per_node = static_cast<int>(*out.devices_per_node);

  const auto intra = o->choice("intra", Need::kOptional, kIntraNames, "intra-node kind");
  const auto intra_bandwidth = o->bandwidth("intra_bandwidth", Need::kOptional);
  if (auto v = o->duration("intra_latency", Need::kOptional)) g.intra_latency = *v;
  const auto pcie_bandwidth = o->bandwidth("pcie_bandwidth", Need::kOptional);
  if (auto v = o->duration("pcie_latency", Need::kOptional)) g.pcie_latency = *v;
  const auto nics = o->integer("nics", Need::kOptional, 0, kMaxNics);
  if (nics) g.nics = static_cast<int>(*nics);
  if (g.nics > 0) {
    if (auto v = o->bandwidth("nic_bandwidth", Need::kRequired)) g.nic_bandwidth = *v;
    if (auto v = o->duration("nic_latency", Need::kOptional)) g.nic_latency = *v;
  } else if (nics) {
    o->reject("nic_bandwidth", "applies only when nics > 0");
    o->reject("nic_latency", "applies only when nics > 0");
  } else {
    o->accept({"nic_bandwidth", "nic_latency"});
  }
  if (auto v = o->bandwidth("host_bandwidth", Need::kOptional)) g.host_bandwidth = *v;
  read_in_range(*o, "compute_share", kFraction, g.compute_share);
  o->report_unknown_keys();

  if (device != nullptr) {
    g.device = device;
    g.intra_efficiency = device->efficiency.nvlink_efficiency;
    g.pcie_efficiency = device->efficiency.pcie_efficiency;
    g.speed_variation = device->efficiency.speed_variation;
    const bool has_nvlink = device->intra_node_bandwidth.bytes_per_second() > 0;
    const bool intra_given = o->value().contains("intra");
    if (intra) {
      g.intra = kIntraKinds[*intra];
    } else if (!intra_given) {
      // An explicit intra_bandwidth says the node has NVLink even if the device lacks it.
      g.intra = has_nvlink || intra_bandwidth ? IntraNodeKind::kNvSwitch : IntraNodeKind::kPcie;
    }
    if (intra || !intra_given) {
      if (g.intra != IntraNodeKind::kPcie) {
        g.intra_bandwidth = intra_bandwidth ? *intra_bandwidth : device->intra_node_bandwidth;
        if (g.intra_bandwidth.bytes_per_second() <= 0) {
          d.error(o->pointer("intra"),
                  "\"" + std::string(intra_node_kind_name(g.intra)) + "\" needs NVLink, and device \"" +
                      device->name + "\" has none (set intra_bandwidth, or use \"pcie\")");
        }
      } else {
        for (std::string_view key : {"intra_bandwidth", "intra_latency"}) {
          if (o->value().contains(std::string(key))) {
            d.error(o->pointer(key), "\"" + std::string(key) +
                                         "\" applies only when intra is nvswitch or nvlink_mesh");
          }
        }
      }
    }
    g.pcie_bandwidth = pcie_bandwidth ? *pcie_bandwidth : device->pcie_bandwidth;
    if (g.pcie_bandwidth.bytes_per_second() <= 0) {
      d.error(o->pointer("pcie_bandwidth"), "missing required key \"pcie_bandwidth\" (device \"" +
                                                device->name + "\" does not give one)");
    }
  }
  out.valid = device != nullptr && d.count() == errors_before;
  return out;
}

// What a region contributes before the cluster is assembled.
struct RegionRead {
  RegionSpec spec;
  int64_t ranks = 0;
  bool valid = false;
};

// Reads `nodes` and `fabric` of `o`, which is either a region or (single region) the
// cluster itself. `multi_region`: nodes then also need NICs to reach the region gateway.
RegionRead read_region_body(JsonObject& o, bool multi_region, const DeviceTable& custom,
                            Diagnostics& d, std::string_view nodes_expected) {
  RegionRead out;
  const size_t errors_before = d.count();
  std::vector<NodeGroupRead> groups;
  std::optional<int64_t> nodes = 0;
  if (const json* list = o.get("nodes", Need::kRequired, nodes_expected)) {
    if (const auto* items = read_array(*list, o.pointer("nodes"), d, "node group")) {
      for (size_t i = 0; i < items->size(); ++i) {
        groups.push_back(read_node_group((*items)[i], child_pointer(o.pointer("nodes"), i), custom, d));
        const NodeGroupRead& g = groups.back();
        if (nodes && g.count) {
          *nodes += *g.count;
        } else {
          nodes.reset();
        }
        if (g.count && g.devices_per_node) out.ranks += *g.count * *g.devices_per_node;
      }
    } else {
      nodes.reset();
    }
  } else {
    nodes.reset();
  }
  if (nodes && *nodes > kMaxRanks) {
    d.error(o.pointer("nodes"), "the region has " + std::to_string(*nodes) + " nodes; at most " +
                                    std::to_string(kMaxRanks) + " are supported");
    nodes.reset();
  }
  const json* fabric = o.get("fabric", Need::kOptional, "");
  read_fabric(fabric, o.pointer("fabric"), nodes, d, out.spec.fabric);

  // A node reaches other nodes (and the region's gateway) only through its NICs.
  if (nodes && (*nodes > 1 || multi_region)) {
    for (const NodeGroupRead& g : groups) {
      if (g.valid && g.spec.nics == 0) {
        d.error(child_pointer(g.pointer, "nics"),
                "must be at least 1: " +
                    std::string(*nodes > 1 ? "the region has " + std::to_string(*nodes) +
                                                 " nodes, joined through their NICs"
                                           : "the node reaches the WAN gateway through its NICs"));
      }
    }
  }
  for (const NodeGroupRead& g : groups) out.spec.node_groups.push_back(g.spec);
  out.valid = d.count() == errors_before;
  return out;
}

// Reads `wan`; reports unknown regions, self-links, and regions that cannot reach the rest.
void read_wan(const json& value, const std::string& pointer, const std::vector<std::string>& names,
              bool names_valid, Diagnostics& d, std::vector<WanLinkSpec>& out) {
  if (!value.is_array()) {
    d.error(pointer, "expected an array of WAN links, got " + describe(value));
    return;
  }
  std::vector<std::string_view> name_views(names.begin(), names.end());
  std::vector<size_t> parent(names.size());
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto root = [&](size_t r) {
    while (parent[r] != r) r = parent[r] = parent[parent[r]];
    return r;
  };
  bool links_valid = true;
  for (size_t i = 0; i < value.size(); ++i) {
    auto o = JsonObject::open(value[i], child_pointer(pointer, i), d);
    if (!o) {
      links_valid = false;
      continue;
    }
    const size_t errors_before = d.count();
    WanLinkSpec link;
    std::vector<size_t> ends;
    if (const json* between = o->get("between", Need::kRequired, "two region names")) {
      const std::string between_pointer = o->pointer("between");
      if (!between->is_array() || between->size() != 2) {
        d.error(between_pointer, "expected an array of two region names, got " + describe(*between));
      } else {
        for (size_t e = 0; e < 2; ++e) {
          auto end = names_valid ? read_choice((*between)[e], child_pointer(between_pointer, e), d,
                                               name_views, "region")
                                 : std::nullopt;
          if (end) ends.push_back(*end);
        }
        if (ends.size() == 2 && ends[0] == ends[1]) {
          d.error(between_pointer, "a WAN link joins two different regions, got " +
                                       in_quotes(names[ends[0]]) + " twice");
        }
      }
    }
    if (auto v = o->bandwidth("bandwidth", Need::kRequired)) link.bandwidth = *v;
    if (auto v = o->duration("latency", Need::kRequired)) link.latency = *v;
    o->report_unknown_keys();
    if (d.count() != errors_before || ends.size() != 2) {
      links_valid = false;
      continue;
    }
    link.a = names[ends[0]];
    link.b = names[ends[1]];
    parent[root(ends[0])] = root(ends[1]);
    out.push_back(std::move(link));
  }
  if (!names_valid || !links_valid || names.size() < 2) return;
  std::map<size_t, std::vector<std::string>> components;
  for (size_t r = 0; r < names.size(); ++r) components[root(r)].push_back(names[r]);
  if (components.size() > 1) {
    std::string parts;
    for (const auto& [root_index, members] : components) {
      std::string part;
      for (const auto& n : members) part += (part.empty() ? "" : ", ") + n;
      parts += (parts.empty() ? "{" : " | {") + part + "}";
    }
    d.error(pointer, "the regions are not all connected: " + parts +
                         " (every region must reach every other through wan links)");
  }
}

}  // namespace

std::optional<LoadedCluster> read_cluster(const json& cluster, const std::string& pointer,
                                          Diagnostics& d) {
  auto o = JsonObject::open(cluster, pointer, d);
  if (!o) return std::nullopt;
  const size_t errors_before = d.count();
  LoadedCluster out;
  DeviceTable custom;
  if (const json* devices = o->get("devices", Need::kOptional, "")) {
    read_custom_devices(*devices, o->pointer("devices"), d, custom, out.owned_specs);
  }
  int64_t ranks = 0;
  if (o->has("regions")) {
    for (std::string_view key : {"nodes", "fabric"}) {
      o->reject(key, "cannot be combined with \"regions\": give either nodes + fabric (one "
                     "region) or regions + wan (several)");
    }
    const std::string regions_pointer = o->pointer("regions");
    const auto* regions = read_array(*o->get("regions", Need::kRequired, ""), regions_pointer, d, "region");
    std::vector<std::string> names;
    bool names_valid = regions != nullptr;
    std::map<std::string, std::string> name_pointers;
    for (size_t i = 0; regions && i < regions->size(); ++i) {
      auto r = JsonObject::open((*regions)[i], child_pointer(regions_pointer, i), d);
      if (!r) {
        names_valid = false;
        continue;
      }
      auto name = r->string("name", Need::kRequired, "a unique region name");
      if (name && name->empty()) {
        d.error(r->pointer("name"), "a region name may not be empty");
        name.reset();
      } else if (name && name_pointers.contains(*name)) {
        d.error(r->pointer("name"), "duplicate region name " + in_quotes(*name) + " (also at " +
                                        name_pointers[*name] + ")");
        name.reset();
      }
      if (name) {
        name_pointers[*name] = r->pointer("name");
        names.push_back(*name);
      }
      names_valid = names_valid && name.has_value();
      RegionRead region = read_region_body(*r, regions->size() > 1, custom, d, "an array of node groups");
      region.spec.name = name.value_or("");
      if (auto v = r->bandwidth("gateway_bandwidth", Need::kRequired)) {
        region.spec.gateway_bandwidth = *v;
      }
      r->report_unknown_keys();
      ranks += region.ranks;
      out.spec.regions.push_back(std::move(region.spec));
    }
    const Need wan_need = regions && regions->size() > 1 ? Need::kRequired : Need::kOptional;
    if (const json* wan = o->get("wan", wan_need, "an array of WAN links joining the regions")) {
      read_wan(*wan, o->pointer("wan"), names, names_valid, d, out.spec.wan);
    }
  } else {
    o->reject("wan", "applies only with \"regions\" (several regions joined by WAN links)");
    RegionRead region = read_region_body(
        *o, false, custom, d, "an array of node groups, or \"regions\" for several regions");
    region.spec.name = "default";
    ranks = region.ranks;
    out.spec.regions.push_back(std::move(region.spec));
  }
  // Fleet speed spread: the devices' own figures unless the scenario sets one for all.
  if (double v = 0; read_in_range(*o, "speed_variation", kUnitInterval, v)) {
    for (RegionSpec& r : out.spec.regions) {
      for (NodeGroupSpec& g : r.node_groups) g.speed_variation = v;
    }
  }
  if (auto v = o->integer("speed_seed", Need::kOptional, 0, int64_t{1} << 53)) {
    out.spec.speed_seed = static_cast<uint64_t>(*v);
  }
  o->report_unknown_keys();
  if (ranks > kMaxRanks) {
    d.error(pointer, "the cluster has " + std::to_string(ranks) + " ranks; at most " +
                         std::to_string(kMaxRanks) + " are supported");
  }
  if (d.count() != errors_before) return std::nullopt;
  return out;
}

}  // namespace dtsim::scenario_detail
