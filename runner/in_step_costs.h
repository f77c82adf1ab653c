// Feedback from a real run: each op's time measured inside the real steps becomes a cost
// database entry tagged in_step, which the measured cost model prefers to the isolated one,
// so that the next prediction prices the kernels as they ran among the others; each
// collective call's time joins the database's measured collectives the same way.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibration/cost_database.h"
#include "executor/measured_timeline.h"
#include "executor/step_comparison.h"
#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim {

// Every op of every compute task in the measured steps [first_step, end_step): one entry per
// distinct signature, a sample per instance and step. Throws std::invalid_argument when a
// step's op durations do not match the task's op list.
std::vector<calibration::CostEntry> in_step_entries(const TaskGraph& graph,
                                                    const executor::MeasuredRun& run,
                                                    int first_step, int end_step);

// Every collective call of the measured steps [first_step, end_step) whose members are
// `ranks` ranks of one node (the groups a cost database's intra-node measurements price):
// a sample per call and step, from its last member's arrival to its last member's end (a
// task that stands for several calls gives each its share), by op and size per call, as
// the measured collective model prices a call once its last member is there. A call whose
// tasks not every member measured is left out.
std::vector<calibration::CollectiveMeasurement> in_step_collectives(
    const TaskGraph& graph, const Cluster& cluster, const executor::MeasuredRun& run,
    int first_step, int end_step, int ranks);

// The ranks of `db`'s intra-node measurements; 0 when it has none.
int intra_node_ranks(const calibration::CostDatabase& db);

// One measurement per op, one point per size: the samples of equal (op, size) pooled.
std::vector<calibration::CollectiveMeasurement> merge_in_step_collectives(
    std::vector<calibration::CollectiveMeasurement> all);

// One entry per signature: the samples of entries of an equal key (several runs) pooled.
std::vector<calibration::CostEntry> merge_in_step(std::vector<calibration::CostEntry> entries);

// `base` with `entries` in it: an entry replaces an in-step entry of an equal signature,
// and sits beside the isolated one (which the model then no longer uses). `collectives`
// join its intra-node link's in-step calls (LinkCalibration::in_step), each point
// replacing one of the same op and size; a database without measured collectives has
// nothing for them to sit beside and takes none.
calibration::CostDatabase with_in_step(
    calibration::CostDatabase base, const std::vector<calibration::CostEntry>& entries,
    const std::vector<calibration::CollectiveMeasurement>& collectives = {});

// Every distinct op of the run, the largest absolute share of the gap first. `price` gives
// the prediction's price of an op on a rank's device.
std::vector<executor::OpComparison> compare_ops(
    const TaskGraph& graph, const executor::MeasuredRun& run,
    const std::function<double(const OpSignature&, int rank)>& price);

}  // namespace dtsim
