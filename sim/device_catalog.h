// The built-in device catalog: datasheet figures for common GPUs and a generic CPU.
#pragma once

#include <span>
#include <string_view>

#include "sim/device.h"

namespace dtsim {

std::span<const DeviceSpec> builtin_devices();
// nullptr when the name is not in the catalog (names are case-sensitive).
const DeviceSpec* find_builtin_device(std::string_view name);

}  // namespace dtsim
