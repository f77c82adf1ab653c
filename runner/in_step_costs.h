// Feedback from a real run: each op's time measured inside the real steps becomes a cost
// database entry tagged in_step, which the measured cost model prefers to the isolated one,
// so that the next prediction prices the kernels as they ran among the others.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibration/cost_database.h"
#include "executor/measured_timeline.h"
#include "executor/step_comparison.h"
#include "sim/task_graph.h"

namespace dtsim {

// Every op of every compute task in the measured steps [first_step, end_step): one entry per
// distinct signature, a sample per instance and step. Throws std::invalid_argument when a
// step's op durations do not match the task's op list.
std::vector<calibration::CostEntry> in_step_entries(const TaskGraph& graph,
                                                    const executor::MeasuredRun& run,
                                                    int first_step, int end_step);

// One entry per signature: the samples of entries of an equal key (several runs) pooled.
std::vector<calibration::CostEntry> merge_in_step(std::vector<calibration::CostEntry> entries);

// `base` with `entries` in it: an entry replaces an in-step entry of an equal signature,
// and sits beside the isolated one (which the model then no longer uses).
calibration::CostDatabase with_in_step(calibration::CostDatabase base,
                                       const std::vector<calibration::CostEntry>& entries);

// Every distinct op of the run, the largest absolute share of the gap first. `price` gives
// the prediction's price of an op on a rank's device.
std::vector<executor::OpComparison> compare_ops(
    const TaskGraph& graph, const executor::MeasuredRun& run,
    const std::function<double(const OpSignature&, int rank)>& price);

}  // namespace dtsim
