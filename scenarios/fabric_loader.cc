// The `fabric` of a region: kind, switch shapes and the keys each kind understands.
#include <algorithm>
#include <numeric>
#include <string_view>

#include "scenarios/cluster_loader.h"

namespace dtsim::scenario_detail {

namespace {

constexpr std::string_view kFabricNames[] = {"none",           "single_switch", "fat_tree",
                                             "rail_optimized", "thin_tree",     "torus"};
constexpr FabricKind kFabricKinds[] = {FabricKind::kNone,          FabricKind::kSingleSwitch,
                                       FabricKind::kFatTree,       FabricKind::kRailOptimized,
                                       FabricKind::kThinTree,      FabricKind::kTorus};
// Far beyond real fabrics; keeps a typo from building millions of switches.
constexpr int64_t kMaxSpines = 4096;

std::string kinds_text(std::initializer_list<FabricKind> kinds) {
  std::string out;
  for (FabricKind k : kinds) out += (out.empty() ? "" : ", ") + std::string(fabric_kind_name(k));
  return out;
}

}  // namespace

void read_fabric(const json* value, const std::string& pointer, std::optional<int64_t> nodes,
                 Diagnostics& d, FabricSpec& out) {
  if (value == nullptr) {
    if (nodes && *nodes > 1) {
      d.error(pointer, "missing required key \"fabric\" (the region has " +
                           std::to_string(*nodes) +
                           " nodes, so they need a fabric: an object with a kind, one of " +
                           join_names(kFabricNames) + ")");
    }
    out.kind = FabricKind::kNone;
    return;
  }
  auto o = JsonObject::open(*value, pointer, d);
  if (!o) return;
  const size_t errors_before = d.count();
  const Need kind_need = nodes && *nodes > 1 ? Need::kRequired : Need::kOptional;
  const auto kind_index = o->choice("kind", kind_need, kFabricNames, "fabric kind");
  if (auto v = o->duration("link_latency", Need::kOptional)) out.link_latency = *v;
  const bool kind_known = kind_index || (!o->value().contains("kind") && kind_need == Need::kOptional);
  if (!kind_known) {
    o->accept({"nodes_per_leaf", "nodes_per_group", "spines", "oversubscription", "group_uplink",
               "torus_dims", "torus_link_bandwidth"});
    o->report_unknown_keys();
    return;
  }
  out.kind = kind_index ? kFabricKinds[*kind_index] : FabricKind::kNone;
  const FabricKind k = out.kind;
  const std::string kind_name(fabric_kind_name(k));

  // Each key applies to some kinds only; elsewhere it would be silently ignored.
  auto applies = [&](std::string_view key, std::initializer_list<FabricKind> kinds) {
    if (std::find(kinds.begin(), kinds.end(), k) != kinds.end()) return true;
    o->reject(key, "applies only to fabric kind " + kinds_text(kinds) + ", not " + kind_name);
    return false;
  };
  using F = FabricKind;
  if (applies("nodes_per_leaf", {F::kFatTree})) {
    if (auto v = o->integer("nodes_per_leaf", Need::kOptional, 1, kMaxRanks)) {
      out.nodes_per_leaf = static_cast<int>(*v);
    }
  }
  if (applies("nodes_per_group", {F::kRailOptimized, F::kThinTree})) {
    if (auto v = o->integer("nodes_per_group", Need::kOptional, 1, kMaxRanks)) {
      out.nodes_per_group = static_cast<int>(*v);
    }
  }
  if (applies("spines", {F::kFatTree, F::kRailOptimized})) {
    if (auto v = o->integer("spines", Need::kOptional, 1, kMaxSpines)) out.spines = static_cast<int>(*v);
  }
  if (applies("oversubscription", {F::kFatTree, F::kRailOptimized})) {
    // At most 1,000: built fabrics are at most about 1:10, and beyond 1,000 an uplink would
    // carry under a thousandth of its leaf's traffic, slowing transfers toward the clock's end.
    static constexpr Range kOversubscription{1, 1000, true, true, "a number in [1, 1000]"};
    read_in_range(*o, "oversubscription", kOversubscription, out.oversubscription);
  }
  if (applies("group_uplink", {F::kThinTree})) {
    const bool group_size_ok = d.count() == errors_before;
    const int64_t groups =
        nodes && group_size_ok ? (*nodes + out.nodes_per_group - 1) / out.nodes_per_group : 1;
    if (groups > 1 && !o->value().contains("group_uplink")) {
      d.error(o->pointer("group_uplink"),
              "missing required key \"group_uplink\" (thin_tree with " + std::to_string(groups) +
                  " groups of up to " + std::to_string(out.nodes_per_group) +
                  " nodes needs the bandwidth from each group switch to the core)");
      o->accept({"group_uplink"});
    } else if (auto v = o->bandwidth("group_uplink", Need::kOptional)) {
      out.group_uplink = *v;
    }
  }
  if (applies("torus_dims", {F::kTorus})) {
    const std::string dims_pointer = o->pointer("torus_dims");
    if (const json* dims = o->get("torus_dims", Need::kRequired, "an array of 2 or 3 integers")) {
      if (!dims->is_array()) {
        d.error(dims_pointer, "expected an array of 2 or 3 integers >= 1, got " + describe(*dims));
      } else if (dims->size() < 2 || dims->size() > 3) {
        d.error(dims_pointer, "expected an array of 2 or 3 integers >= 1 (a 2D or 3D node grid), got " +
                                  std::to_string(dims->size()) + " dimension(s)");
      } else {
        bool ok = true;
        for (size_t i = 0; i < dims->size(); ++i) {
          auto v = read_integer((*dims)[i], child_pointer(dims_pointer, i), d, 1, kMaxRanks);
          ok = ok && v.has_value();
          if (v) out.torus_dims.push_back(static_cast<int>(*v));
        }
        const int64_t product = std::accumulate(out.torus_dims.begin(), out.torus_dims.end(),
                                                int64_t{1}, std::multiplies<>());
        if (ok && nodes && product != *nodes) {
          std::string shape;
          for (int dim : out.torus_dims) shape += (shape.empty() ? "" : " x ") + std::to_string(dim);
          d.error(dims_pointer, "torus dims " + shape + " hold " + std::to_string(product) +
                                    " nodes, but the region has " + std::to_string(*nodes) +
                                    " (the product of the dims must equal the node count)");
        }
      }
    }
  }
  if (applies("torus_link_bandwidth", {F::kTorus})) {
    if (auto v = o->bandwidth("torus_link_bandwidth", Need::kOptional)) out.torus_link_bandwidth = *v;
  }
  o->report_unknown_keys();
  if (k == FabricKind::kNone && nodes && *nodes > 1) {
    d.error(o->pointer("kind"), "fabric kind \"none\" holds exactly one node, but the region has " +
                                    std::to_string(*nodes) + " (pick one of single_switch, "
                                                             "fat_tree, rail_optimized, thin_tree, torus)");
  }
}

}  // namespace dtsim::scenario_detail
