// Collective calls priced from measurements instead of simulated over the links: the
// caller (the CLI, from a cost database's measured collectives) may give the simulation a
// model that says how long a call takes, for the groups it measured.
#pragma once

#include <optional>

#include "sim/collectives/collective_plan.h"
#include "sim/cost_model.h"
#include "sim/device.h"
#include "sim/units.h"

namespace dtsim {

struct CollectiveCost {
  Duration time;
  CostSource source = CostSource::kMeasured;  // measured, interpolated or extrapolated
};

class CollectiveCostModel {
 public:
  virtual ~CollectiveCostModel() = default;
  // One call of `op` moving `bytes` (nccl-tests' size) over the group `layout`, every member
  // a `device`, with the call to itself; nothing when the model measured no such group (the
  // network model then runs the call).
  virtual std::optional<CollectiveCost> price(CollectiveOp op, const GroupLayout& layout,
                                              const DeviceSpec& device, Bytes bytes) const = 0;
};

}  // namespace dtsim
