// The training figures of a run: step time, throughput, MFU, time-to-train, the per-rank
// breakdown and memory, and the comparison with a published reference.
#pragma once

#include <nlohmann/json.hpp>

#include "models/scenario_result.h"

namespace dtsim {

// Rank `rank`'s figures per iteration: with local SGD (sync_every N > 1) the local and the
// synchronizing step weighed as the iteration time is, ((N - 1) local + sync) / N, and the
// larger peak memory of the two; otherwise the simulated step's.
RankStats rank_stats_per_iteration(const LoweredScenario& scenario, const ScenarioRun& run,
                                   int rank);

// The "training" section of summary.json (scenario.training must be set).
nlohmann::ordered_json make_training_summary(const LoweredScenario& scenario,
                                             const ScenarioRun& run);
// The "reference" section: source, metric, reference, predicted and the signed relative
// error, read from a training section.
nlohmann::ordered_json make_reference_summary(const Reference& reference,
                                              const nlohmann::ordered_json& training);

}  // namespace dtsim
