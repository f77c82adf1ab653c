// A lowered training step stores the ranks that run alike once: far fewer records than
// tasks, and a run of it is the run of the same tasks stored one by one.
#include <gtest/gtest.h>

#include <string>

#include "tests/prepared_scenario.h"
#include "tests/sim/run_outcome.h"

namespace dtsim {
namespace {

// The same tasks, added one by one without brackets.
TaskGraph stored_one_by_one(const TaskGraph& g) {
  TaskGraph flat;
  for (const std::string& s : g.streams()) flat.stream(s);
  for (const CollectiveCall& call : g.collectives()) flat.add_collective(call);
  for (OpListId l = 0; l < g.num_op_lists(); ++l) flat.add_op_list(g.op_list(l), g.op_operands(l));
  TaskId id = 0;
  for (const TaskView v : g.tasks()) {
    Task t;
    static_cast<TaskFields&>(t) = v;
    t.name = std::string(v.name);
    t.deps.assign(v.deps.begin(), v.deps.end());
    t.transfer = g.transfer(id++);
    flat.add(t);
  }
  return flat;
}

// GPT-3 on 128 GPUs: tensor, pipeline (interleaved) and data parallelism of 2.
TEST(RanksStoredOnceStep, AStepRunsAsItsTasksStoredOneByOne) {
  const auto p = test_support::prepare_file(
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/gpt3-175b-1024xA100.json",
      {"cluster.nodes.0.count=16", "training.global_batch=16"});
  const TaskGraph& folded = p->lowered.graph;
  const TaskGraph flat = stored_one_by_one(folded);
  // 128 ranks, 16 pipeline stages: every rank of a stage reads one set of records.
  EXPECT_EQ(folded.num_records() * 8, flat.num_records());
  SimulationOptions options;
  options.network_model = "flow";
  const auto a = testing::run_outcome(p->scenario.cluster, folded, options);
  const auto b = testing::run_outcome(p->scenario.cluster, flat, options);
  EXPECT_EQ(a.result.end, b.result.end);
  EXPECT_EQ(a.ends, b.ends);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.busy, b.busy);
  ASSERT_EQ(a.result.ranks.size(), b.result.ranks.size());
  for (size_t r = 0; r < a.result.ranks.size(); ++r) {
    EXPECT_EQ(a.result.ranks[r].compute, b.result.ranks[r].compute) << r;
    EXPECT_EQ(a.result.ranks[r].waiting, b.result.ranks[r].waiting) << r;
    EXPECT_EQ(a.result.ranks[r].peak_memory, b.result.ranks[r].peak_memory) << r;
  }
}

}  // namespace
}  // namespace dtsim
