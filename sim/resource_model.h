// The interface every resource model (compute streams, network links, ...) implements so
// that the engine can advance fluid models and timed events together (SimGrid's split).
#pragma once

#include "sim/units.h"

namespace dtsim {

// A resource model owns actions that consume capacity at some rate. The engine asks each
// model when its next action completes, moves time to the earliest of that and the next
// timed event, and lets the model finish whatever completes then.
class ResourceModel {
 public:
  virtual ~ResourceModel() = default;
  // Earliest time at which one of this model's actions completes, or Duration::infinite().
  // May settle pending rate changes first, so it is not const.
  virtual Time next_completion() = 0;
  // Finish every action that completes at `now` (the engine's current time), running
  // their callbacks. Callbacks may start new actions or schedule events.
  virtual void complete_due(Time now) = 0;
};

}  // namespace dtsim
