// A rank's measured timeline on disk (rank-N.json in the run's folder): what dtsim-rank
// writes when its steps are done and the launcher reads back, one file per rank.
#pragma once

#include <filesystem>

#include "executor/measured_timeline.h"

namespace dtsim {

std::filesystem::path rank_timeline_path(const std::filesystem::path& folder, int rank);
std::filesystem::path rank_progress_path(const std::filesystem::path& folder, int rank);

// Written whole or not at all (reports/atomic_file.h). Throws std::runtime_error naming the
// path when it cannot.
void write_rank_timeline(const std::filesystem::path& path, const executor::MeasuredRun& header,
                         const executor::MeasuredRank& rank);

// Reads rank-0 .. rank-(ranks - 1).json from `folder` into one run. Throws InputError naming
// the file and the field for a missing or malformed one.
executor::MeasuredRun read_rank_timelines(const std::filesystem::path& folder, int ranks);

}  // namespace dtsim
