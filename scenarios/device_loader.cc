// Custom devices (`cluster.devices`): catalog entries with overrides, or whole new devices.
#include <cmath>
#include <limits>
#include <string_view>
#include <tuple>
#include <vector>

#include "scenarios/cluster_loader.h"
#include "sim/device_catalog.h"
#include "sim/efficiency_figures.h"

namespace dtsim::scenario_detail {

namespace {

constexpr std::string_view kDeviceKindNames[] = {"gpu", "cpu"};

std::vector<std::string_view> catalog_names() {
  std::vector<std::string_view> names;
  for (const DeviceSpec& spec : builtin_devices()) names.push_back(spec.name);
  return names;
}

// Reads `peak` (dtype -> FLOP rate) over the values already in `spec`; returns how many
// entries it set.
int read_peaks(const json& value, const std::string& pointer, Diagnostics& d, DeviceSpec& spec) {
  auto peak = JsonObject::open(value, pointer, d);
  if (!peak) return 0;
  int set = 0;
  for (DType t : kAllDTypes) {
    if (auto rate = peak->flop_rate(dtype_name(t), Need::kOptional)) {
      spec.peak[static_cast<size_t>(t)] = *rate;
      ++set;
    }
  }
  peak->report_unknown_keys();
  if (value.empty()) {
    d.error(pointer, "must name at least one dtype (one of " +
                         join_names(names_of(kAllDTypes, dtype_name)) + ")");
  }
  return set;
}

// Reads {"LL": {...}, "LL128": {...}, "Simple": {...}} over the figures already in `table`.
void read_protocols(const json& value, const std::string& pointer, Diagnostics& d,
                    ProtocolTable& table) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return;
  static constexpr Range kShare{0, 1, true, true, "a fraction in [0, 1] (0: not used)"};
  for (CollectiveProtocol p : kAllCollectiveProtocols) {
    const std::string_view name = collective_protocol_name(p);
    const json* v = o->get(name, Need::kOptional, "an object");
    if (v == nullptr) continue;
    auto po = JsonObject::open(*v, o->pointer(name), d);
    if (!po) continue;
    ProtocolCosts& c = table[static_cast<size_t>(p)];
    for (auto [key, field] : {std::pair{"base", &c.base},
                              std::pair{"intra_node_step", &c.intra_node_step},
                              std::pair{"network_step", &c.network_step}}) {
      if (auto x = po->duration(key, Need::kOptional)) *field = *x;
    }
    read_in_range(*po, "bandwidth_fraction", kShare, c.bandwidth_fraction);
    po->report_unknown_keys();
  }
  o->report_unknown_keys();
}

// Reads `efficiency` over the figures already in `e` (the base device's, or the defaults).
void read_efficiency(const json& value, const std::string& pointer, Diagnostics& d,
                     DeviceEfficiency& e) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return;
  for (const EfficiencyFigure& f : efficiency_figures()) {
    switch (f.type) {
      case EfficiencyFigure::Type::kNumber:
        read_in_range(*o, f.key, Range{f.low, f.high, f.low_included, f.high_included, f.expected},
                      e.*f.number);
        break;
      case EfficiencyFigure::Type::kInteger:
        if (auto v = o->integer(f.key, Need::kOptional, static_cast<int64_t>(f.low),
                                static_cast<int64_t>(f.high))) {
          e.*f.integer = static_cast<int>(*v);
        }
        break;
      case EfficiencyFigure::Type::kDuration:
        if (auto v = o->duration(f.key, Need::kOptional)) e.*f.duration = *v;
        break;
      case EfficiencyFigure::Type::kBytes:
        if (auto v = o->bytes(f.key, Need::kOptional)) e.*f.bytes = *v;
        break;
      case EfficiencyFigure::Type::kFlops:
        if (auto v = o->flops(f.key, Need::kOptional)) {
          if (v->count() > 0) {
            e.*f.number = v->count();
          } else {
            d.error(o->pointer(f.key), "must be " + std::string(f.expected));
          }
        }
        break;
    }
  }
  if (const json* v = o->get("collective_protocols", Need::kOptional, "an object")) {
    read_protocols(*v, o->pointer("collective_protocols"), d, e.collective_protocols);
  }
  o->report_unknown_keys();
}

std::unique_ptr<DeviceSpec> read_device(const json& value, const std::string& pointer,
                                        Diagnostics& d, DeviceTable& table) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return nullptr;
  const size_t errors_before = d.count();
  auto spec = std::make_unique<DeviceSpec>();

  const auto name = o->string("name", Need::kRequired, "a unique device name");
  bool named = false;
  if (name && name->empty()) {
    d.error(o->pointer("name"), "a device name may not be empty");
  } else if (name && find_builtin_device(*name) != nullptr) {
    d.error(o->pointer("name"), in_quotes(*name) +
                                    " is a catalog device; a custom device may not shadow it "
                                    "(give it another name and \"base\": \"" +
                                    *name + "\")");
  } else if (name && table.contains(*name)) {
    d.error(o->pointer("name"), "duplicate device name " + in_quotes(*name));
  } else if (name) {
    named = true;
  }

  // Without a usable base every figure must be given; with an unknown base that is
  // already an error, so the missing figures are not reported on top of it.
  const bool has_base = o->has("base");
  const auto base = o->string("base", Need::kOptional, "a catalog device name");
  if (base) {
    if (const DeviceSpec* catalog = find_builtin_device(*base)) {
      *spec = *catalog;
    } else {
      const auto names = catalog_names();
      const std::string guess = closest_match(*base, names);
      d.error(o->pointer("base"), "unknown catalog device " + in_quotes(*base) + " (" +
                                      (guess.empty() ? "" : "did you mean \"" + guess + "\"? ") +
                                      "expected one of " + join_names(names) + ")");
    }
  }
  const Need figure = has_base ? Need::kOptional : Need::kRequired;
  if (name) spec->name = *name;
  spec->description = base ? "custom device based on " + *base : "custom device";

  if (auto kind = o->choice("kind", Need::kOptional, kDeviceKindNames, "device kind")) {
    spec->kind = *kind == 0 ? DeviceKind::kGpu : DeviceKind::kCpu;
  }
  if (const json* peak = o->get("peak", figure, "an object of dtype -> FLOP rate")) {
    read_peaks(*peak, o->pointer("peak"), d, *spec);
  }
  if (auto v = o->bytes("memory", figure)) spec->memory_capacity = *v;
  if (auto v = o->bandwidth("memory_bandwidth", figure)) spec->memory_bandwidth = *v;
  if (auto v = o->bandwidth("nvlink_bandwidth", Need::kOptional)) spec->intra_node_bandwidth = *v;
  if (auto v = o->bandwidth("pcie_bandwidth", figure)) spec->pcie_bandwidth = *v;
  if (const json* e = o->get("efficiency", Need::kOptional, "an object of efficiency figures")) {
    read_efficiency(*e, o->pointer("efficiency"), d, spec->efficiency);
  }
  o->report_unknown_keys();

  const bool valid = d.count() == errors_before;
  if (named) table[*name] = valid ? spec.get() : nullptr;
  return valid ? std::move(spec) : nullptr;
}

}  // namespace

void read_custom_devices(const json& devices, const std::string& pointer, Diagnostics& d,
                         DeviceTable& table, std::vector<std::unique_ptr<DeviceSpec>>& owned) {
  if (!devices.is_array()) {
    d.error(pointer, "expected an array of custom devices, got " + describe(devices));
    return;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (auto spec = read_device(devices[i], child_pointer(pointer, i), d, table)) {
      owned.push_back(std::move(spec));
    }
  }
}

}  // namespace dtsim::scenario_detail
