// Reading a cost database file as every other input is read: within the input size limit
// and through the strict JSON reader (a key written twice, a number beyond a double and a
// file without a size are errors with their place, not a silent last value or an endless
// read), then checked field by field by calibration's reader.
#pragma once

#include <string>

#include "calibration/cost_database.h"

namespace dtsim {

// Throws InputError naming the file (and the pointer or line) for anything it refuses.
calibration::CostDatabase read_cost_database_file(const std::string& path);

}  // namespace dtsim
