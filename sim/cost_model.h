// The one interface through which every op's time is priced: a CostModel takes an op
// signature and a device and says how long the kernel runs and where that figure came
// from. The caller (CLI, GUI) chooses the model; models/ has the roofline model,
// calibration/ the measured one.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/device.h"
#include "sim/op_signature.h"
#include "sim/units.h"

namespace dtsim {

// measured: a timing of this very signature on this device; interpolated: between measured
// sizes; extrapolated: beyond them; roofline: the analytical model (no measurement).
enum class CostSource : uint8_t { kMeasured, kInterpolated, kExtrapolated, kRoofline };
inline constexpr std::array kAllCostSources{CostSource::kMeasured, CostSource::kInterpolated,
                                            CostSource::kExtrapolated, CostSource::kRoofline};
std::string_view cost_source_name(CostSource s);

struct OpCost {
  OpCost() = default;
  OpCost(Duration t, CostSource s) : time(t), source(s) {}
  // The kernel's own time, as a profiler (CUPTI) measures it: without its launch. The
  // lowering adds the device's DeviceEfficiency::kernel_launch per kernel.
  Duration time;
  CostSource source = CostSource::kRoofline;
  // A CPU kernel timed beside co-runners (calibration/co_runners.h): `time` is its time
  // while `co_runners` other cores of its CPU run kernels of their own, `alone` its time
  // with the CPU to itself; the simulator prices it between the two by how many of its
  // neighbours compute meanwhile (sim/compute_model.h). 0 co-runners: `time` holds whatever
  // the CPU's other cores do.
  Duration alone;
  int co_runners = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // The kernel's time on `device`, with the device to itself. Throws std::invalid_argument
  // when the device cannot run it (no peak rate for its math).
  virtual OpCost price(const OpSignature& op, const DeviceSpec& device) const = 0;
  // Whether any price may carry co-runners (OpCost::co_runners); false skips looking.
  virtual bool prices_crowding() const { return false; }
};

// Ops and kernel time of a step by where their figures came from, summed over every compute
// task of every rank.
struct CostTally {
  struct Share {
    int64_t ops = 0;
    Duration time;
  };
  std::array<Share, kAllCostSources.size()> by_source{};
  Share launches;  // the launch overhead added per kernel
  Share given;     // compute tasks whose duration the scenario gave (no ops)

  Share& of(CostSource s) { return by_source[static_cast<size_t>(s)]; }
  const Share& of(CostSource s) const { return by_source[static_cast<size_t>(s)]; }
  void add(const CostTally& other, int64_t times = 1);
};

}  // namespace dtsim
