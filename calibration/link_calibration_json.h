// A link calibration's JSON form: the cost database's "links" entries (version 2) and the
// probe's output share the measurements' reader.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "calibration/json_reader.h"
#include "calibration/link_calibration.h"

namespace dtsim::calibration {

nlohmann::ordered_json link_calibration_to_json(const LinkCalibration& links);

// Reads one "links" entry at `pointer`: its samples, their statistics (recomputed; a
// median that disagrees is refused) and its fit (refitted; figures that disagree are
// refused). With `with_fit` false (the probe's output) the fit is computed, not read.
LinkCalibration link_calibration_from_json(const nlohmann::json& o, const Reader& r,
                                           const std::string& pointer, bool with_fit);

}  // namespace dtsim::calibration
