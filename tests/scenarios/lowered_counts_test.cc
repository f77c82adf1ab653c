// estimate_lowered_counts against the graphs lower_scenario builds: the counts a memory
// estimate scales from one rank per pipeline stage must be the built graph's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using test_support::prepare;
using test_support::prepare_file;
using test_support::roofline;

// Within a millionth: a sampled call counts k/n of itself, so sums of fractions may round.
void expect_counts(const TaskGraphCounts& estimated, const TaskGraphCounts& built,
                   const std::string& what) {
  const auto near = [&](double e, double b, const char* field) {
    EXPECT_NEAR(e, b, 1e-6 * std::max(1.0, b)) << what << ": " << field;
  };
  near(estimated.tasks, built.tasks, "tasks");
  near(estimated.dependencies, built.dependencies, "dependencies");
  near(estimated.name_chars, built.name_chars, "name_chars");
  near(estimated.transfers, built.transfers, "transfers");
  near(estimated.messages, built.messages, "messages");
  near(estimated.collectives, built.collectives, "collectives");
  near(estimated.collective_members, built.collective_members, "collective_members");
  near(estimated.collective_label_chars, built.collective_label_chars, "collective_label_chars");
  near(estimated.op_list_bytes, built.op_list_bytes, "op_list_bytes");
  near(estimated.records, built.records, "records");
  near(estimated.stored_dependencies, built.stored_dependencies, "stored_dependencies");
  near(estimated.stored_transfers, built.stored_transfers, "stored_transfers");
  near(estimated.overrides, built.overrides, "overrides");
  near(estimated.segments, built.segments, "segments");
  near(estimated.templates, built.templates, "templates");
}

void expect_estimate_matches(const test_support::Prepared& p, const std::string& what) {
  const LoweredCounts estimated = estimate_lowered_counts(p.scenario, roofline());
  expect_counts(estimated.graph, p.lowered.graph.counts(), what);
  ASSERT_EQ(estimated.local_graph.has_value(), p.lowered.local_graph.has_value()) << what;
  if (estimated.local_graph) {
    expect_counts(*estimated.local_graph, p.lowered.local_graph->counts(), what + " (local)");
  }
}

std::string example(const std::string& name) {
  return std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/" + name;
}

// Every bundled example but the two largest training steps (their own cases below, smaller).
TEST(LoweredCounts, BundledExamplesAreCountedExactly) {
  for (const char* name :
       {"allreduce-1024xH100-fattree.json", "allreduce-2048xV100-2dtorus.json",
        "allreduce-8xH100-nvswitch.json", "classifier-100m-classes-256xV100.json",
        "geo-2regions-allreduce.json", "geo-2regions-llama3-8b.json", "hetero-a100-v100-gpt.json",
        "llama3-70b-64xH100.json", "resnet50-256xP100.json", "small-transformer-2xcpu.json"}) {
    expect_estimate_matches(*prepare_file(example(name)), name);
  }
}

// A task graph scenario is counted as loaded: its op lists with the capacity they grew to,
// which the copy that lowering prices gives back. Everything else is exact.
TEST(LoweredCounts, ATaskGraphIsCountedAsLoaded) {
  const auto p = prepare_file(example("taskgraph-dp-overlap.json"));
  TaskGraphCounts estimated = estimate_lowered_counts(p->scenario, roofline()).graph;
  const TaskGraphCounts built = p->lowered.graph.counts();
  EXPECT_GE(estimated.op_list_bytes, built.op_list_bytes);
  EXPECT_LE(estimated.op_list_bytes, 2 * built.op_list_bytes);
  estimated.op_list_bytes = built.op_list_bytes;
  expect_counts(estimated, built, "taskgraph-dp-overlap");
}

// GPT-3 at 128 GPUs (data parallelism 2 of the example's 16): tensor, pipeline and data
// parallelism with interleaved stages, at both granularities.
TEST(LoweredCounts, Gpt3AtBothGranularities) {
  for (const char* granularity : {"chunk", "layer"}) {
    const auto p = prepare_file(example("gpt3-175b-1024xA100.json"),
                                {"cluster.nodes.0.count=16", "training.global_batch=16",
                                 std::string("simulation.granularity=") + granularity});
    expect_estimate_matches(*p, std::string("gpt3 at ") + granularity);
  }
}

// Mixture of experts with expert and context parallelism, where a rank's collectives span
// groups of several shapes.
TEST(LoweredCounts, ExpertAndContextParallelism) {
  const nlohmann::json s = nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 4, "device": "H100", "devices_per_node": 8,
                           "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "single_switch"}},
    "model": {"preset": "mixtral-8x7b", "layers": 4},
    "training": {"global_batch": 16, "micro_batch": 1, "seq_len": 4096},
    "parallelism": {"tp": 2, "pp": 2, "cp": 2, "ep": 4, "sequence_parallel": true},
    "simulation": {"granularity": "layer", "trace": false}})");
  expect_estimate_matches(*prepare(s), "moe");
}

// A plan the cluster cannot hold is refused by the estimate as by lowering.
TEST(LoweredCounts, RefusesWhatLoweringRefuses) {
  const Scenario s = load_scenario_file(example("llama3-70b-64xH100.json"), {"parallelism.tp=16"});
  EXPECT_THROW(lower_scenario(s, roofline()), ScenarioError);
  EXPECT_THROW(estimate_lowered_counts(s, roofline()), ScenarioError);
}

}  // namespace
}  // namespace dtsim
