// The training sections of a scenario (model, training, parallelism, reference): what they
// load into, and the error each mistake gets, at its JSON pointer.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "scenarios/loader.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using nlohmann::json;

// Two 4-GPU H100 nodes on one switch: 8 ranks.
constexpr const char* kCluster = R"({
  "nodes": [{"count": 2, "device": "H100", "devices_per_node": 4, "nic_bandwidth": "400Gbps"}],
  "fabric": {"kind": "single_switch"}
})";
constexpr const char* kSmallGpt =
    R"({"family": "gpt", "layers": 4, "hidden": 256, "heads": 8, "vocab": 1000, "seq_len": 64})";

std::string training_doc(const std::string& model, const std::string& training = "{}",
                         const std::string& parallelism = "{}", const std::string& extra = "") {
  return std::string("{\"cluster\": ") + kCluster + ", \"model\": " + model +
         ", \"training\": " + training + ", \"parallelism\": " + parallelism + extra + "}";
}

std::vector<std::string> errors_of(const std::string& text) {
  try {
    test_support::prepare(json::parse(text), "t.json");
  } catch (const ScenarioError& e) {
    return e.messages();
  }
  return {};
}

testing::AssertionResult has_error(const std::vector<std::string>& messages,
                                   const std::string& pointer, const std::string& phrase) {
  const std::string prefix = pointer.empty() ? "t.json: " : "t.json: " + pointer + ": ";
  std::string got;
  for (const auto& m : messages) {
    if (m.rfind(prefix, 0) == 0 && m.find(phrase) != std::string::npos) {
      return testing::AssertionSuccess();
    }
    got += "  " + m + "\n";
  }
  return testing::AssertionFailure() << "no error at \"" << pointer << "\" containing \"" << phrase
                                     << "\"; got:\n"
                                     << (got.empty() ? "  (no errors)\n" : got);
}

TEST(TrainingLoader, LoadsAndLowersAStep) {
  const auto s_prepared = test_support::prepare(
      json::parse(training_doc(kSmallGpt, R"({"global_batch": 16, "micro_batch": 2,
                                               "precision": "bf16", "recompute": "selective",
                                               "iterations": 100})",
                               R"({"tp": 2, "pp": 2, "schedule": "gpipe"})")),
      "t.json");
  const LoweredScenario& s = s_prepared->lowered;
  ASSERT_TRUE(s.training.has_value());
  EXPECT_EQ(s_prepared->scenario.workload_kind, WorkloadKind::kTraining);
  EXPECT_EQ(s.training->step.plan.dp, 2);  // 8 ranks / (tp 2 x pp 2)
  EXPECT_EQ(s.training->step.micro_batches, 4);  // 16 / (2 x dp 2)
  EXPECT_EQ(s.training->step.samples_per_iteration, 16);
  EXPECT_EQ(s.training->step.tokens_per_iteration, 16 * 64);
  EXPECT_EQ(s.training->training.iterations, 100);
  EXPECT_FALSE(s.graph.tasks().empty());
  EXPECT_TRUE(s.graph.validate(8).empty());
  EXPECT_FALSE(s.training->step.plan.tp_comm_overlap);
  EXPECT_FALSE(s.training->training.flash_attention);

  const auto overlapped_prepared = test_support::prepare(
      json::parse(training_doc(kSmallGpt, R"({"global_batch": 16, "flash_attention": true})",
                               R"({"tp": 2, "sequence_parallel": true, "tp_comm_overlap": true})")),
      "t.json");
  const LoweredScenario& overlapped = overlapped_prepared->lowered;
  ASSERT_TRUE(overlapped.training.has_value());
  EXPECT_TRUE(overlapped.training->step.plan.tp_comm_overlap);
  EXPECT_TRUE(overlapped.training->training.flash_attention);
  EXPECT_TRUE(overlapped.training->step.plan.overlap_param_gather);

  const auto serial_prepared = test_support::prepare(
      json::parse(training_doc(kSmallGpt, R"({"global_batch": 16})",
                               R"({"zero_stage": 3, "overlap_param_gather": false,
                                   "per_parameter_gather": true, "persistence_threshold": 100000,
                                   "gather_copies_per_rank": true, "grad_all_reduce": true})")),
      "t.json");
  const LoweredScenario& serial = serial_prepared->lowered;
  ASSERT_TRUE(serial.training.has_value());
  const models::ParallelPlan& deepspeed = serial.training->step.plan;
  EXPECT_FALSE(deepspeed.overlap_param_gather);
  EXPECT_TRUE(deepspeed.per_parameter_gather);
  EXPECT_EQ(deepspeed.persistence_threshold, 100000);
  EXPECT_TRUE(deepspeed.gather_copies_per_rank);
  EXPECT_TRUE(deepspeed.grad_all_reduce);

  // "even" spells out the defaults.
  const auto even_prepared = test_support::prepare(
      json::parse(
          training_doc(kSmallGpt, R"({"global_batch": 16})",
                       R"({"pp": 2, "stage_layers": "even", "replica_micro_batch": "even"})")),
      "t.json");
  const LoweredScenario& even = even_prepared->lowered;
  ASSERT_TRUE(even.training.has_value());
  const auto& resolved = even.training->step.plan;
  EXPECT_FALSE(resolved.balance_stages);
  EXPECT_FALSE(resolved.balance_replicas);
  EXPECT_EQ(resolved.replica_micro_batch, std::vector<int64_t>(resolved.dp, 1));
}

TEST(TrainingLoader, PresetWithOverridesAndReference) {
  const auto s_prepared = test_support::prepare(
      json::parse(training_doc(R"({"preset": "gpt3-1.3b", "layers": 8})", R"({"global_batch": 8})",
                               "{}",
                               R"(, "reference": {"source": "s", "metric": "mfu", "value": 0.4})")),
      "t.json");
  const LoweredScenario& s = s_prepared->lowered;
  EXPECT_EQ(s.training->model.layers, 8);
  EXPECT_EQ(s.training->model.hidden, 2048);
  ASSERT_TRUE(s.reference.has_value());
  EXPECT_EQ(s.reference->metric, "mfu");
}

TEST(TrainingLoader, ModelErrors) {
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "gpt3-175"})")), "/model/preset",
                        "unknown model preset \"gpt3-175\" (did you mean"));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "gpt3-1.3b", "family": "gpt"})")),
                        "/model", "exactly one of"));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"family": "gtp"})")), "/model/family",
                        "model family"));
  EXPECT_TRUE(has_error(errors_of(training_doc(
                            R"({"family": "gpt", "layers": 2, "hidden": 1000, "heads": 3, "vocab": 10, "seq_len": 8})")),
                        "/model/hidden", "must be divisible by heads"));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "gpt3-1.3b", "layers": 0})")),
                        "/model/layers", ""));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "gpt3-1.3b", "layer": 4})")),
                        "/model/layer", ""));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"hf_config": "no/such/config.json"})")),
                        "/model/hf_config", "cannot read"));
}

TEST(TrainingLoader, TrainingErrors) {
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"precision": "bf17"})")),
                        "/training/precision", "precision"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"optimizer": "adagrad"})")),
                        "/training/optimizer", "optimizer"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"recompute": "some"})")),
                        "/training/recompute", "recompute mode"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"micro_batch": 0})")),
                        "/training/micro_batch", ""));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"epochs": 3})")), "/training/epochs",
                        "needs \"dataset_samples\""));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"iterations": 3, "total_tokens": 1e9})")),
                        "/training", "at most one of"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"recompute_modules": ["mlp"]})")),
                        "/training/recompute_modules",
                        "applies to \"recompute\": \"selective\", and recompute is \"none\""));
  EXPECT_TRUE(has_error(
      errors_of(training_doc(kSmallGpt, R"({"recompute": "selective", "recompute_modules": ["moe_ac"]})")),
      "/training/recompute_modules/0", "recompute module"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"recompute_num_layers": 2})")),
                        "/training/recompute_num_layers", "applies to \"recompute\": \"full\""));
  EXPECT_TRUE(has_error(
      errors_of(training_doc(kSmallGpt, R"({"recompute": "full", "recompute_method": "blocks"})")),
      "/training/recompute_method", "recompute method"));
  EXPECT_TRUE(errors_of(training_doc(kSmallGpt, R"({"recompute": "full", "recompute_method": "block", "recompute_num_layers": 2})"))
                  .empty());
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"expert_capacity_factor": 0.5})")),
                        "/training/expert_capacity_factor", "at least 1"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"expert_load_imbalance": 0.9})")),
                        "/training/expert_load_imbalance", "expected a number >= 1"));
}

// training.run: keys that need each other, and a run length to apply to.
TEST(TrainingLoader, RunParts) {
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"iterations": 10, "run": {"checkpoint_every": 5}})")),
                        "/training/run/checkpoint_every", "needs \"checkpoint_write_bandwidth\""));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"iterations": 10, "run": {"eval_samples": 5}})")),
                        "/training/run/eval_samples", "needs \"eval_every\""));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"run": {"startup": "1min"}})")),
                        "/training/run", "give its length"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"iterations": 10, "run": {"startup": "soon"}})")),
                        "/training/run/startup", ""));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"iterations": 10, "run": {"warmup": 1}})")),
                        "/training/run/warmup", ""));
  EXPECT_TRUE(errors_of(training_doc(kSmallGpt, R"({"iterations": 10, "run": {"startup": "1min", "checkpoint_every": 5, "checkpoint_write_bandwidth": "2GB/s", "eval_every": 5, "eval_samples": 100, "input_samples_per_s_per_node": 1000}})"))
                  .empty());
}

// Per-layer windows: a pattern of "sliding" and "full" needs a window to pick layers for.
TEST(TrainingLoader, WindowPattern) {
  EXPECT_TRUE(has_error(
      errors_of(training_doc(R"({"preset": "llama3-8b", "layers": 2, "window_pattern": ["sliding", "full"]})")),
      "/model/window_pattern", "there is no sliding_window"));
  EXPECT_TRUE(has_error(errors_of(training_doc(
                            R"({"preset": "llama3-8b", "layers": 2, "sliding_window": 64, "window_pattern": ["sliding", "global"]})")),
                        "/model/window_pattern/1", "layer's attention"));
  EXPECT_TRUE(errors_of(training_doc(
                            R"({"preset": "llama3-8b", "layers": 2, "sliding_window": 64, "window_pattern": ["sliding", "full"], "attention_sinks": true})",
                            R"({"flash_attention": true, "seq_len": 256})"))
                  .empty());
}

// A resnet of any stage list; its keys' problems point into the list.
TEST(TrainingLoader, ResnetStages) {
  constexpr const char* kResnet18 = R"({"family": "resnet", "image_size": 64, "stages": [
      {"blocks": 2, "width": 64, "block": "basic"}, {"blocks": 2, "width": 128, "stride": 2, "block": "basic"}]})";
  EXPECT_TRUE(errors_of(training_doc(kResnet18, R"({"global_batch": 16})")).empty());
  EXPECT_TRUE(
      has_error(errors_of(training_doc(
                    R"({"family": "resnet", "stages": [{"blocks": 2, "width": 64, "block": "basic"},
          {"blocks": 2, "width": 64, "stride": 40, "block": "basic"}]})")),
                "/model/stages/1/stride", "must be between 1 and 16, got 40"));
  EXPECT_TRUE(has_error(
      errors_of(training_doc(
          R"({"family": "resnet", "stages": [{"blocks": 2, "width": 64, "block": "wide"}]})")),
      "/model/stages/0/block", "residual block"));
  EXPECT_TRUE(has_error(
      errors_of(
          training_doc(R"({"family": "resnet", "stages": [{"blocks": 2, "block": "basic"}]})")),
      "/model/stages/0/width", "missing required key"));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"family": "resnet"})")), "/model",
                        "missing required key \"stages\" for family \"resnet\""));
  EXPECT_TRUE(
      has_error(errors_of(training_doc(R"({"family": "resnet", "stem": {"kernel": 3, "pool": false},
          "stages": [{"blocks": 1, "width": 8, "block": "basic"}]})")),
                "/model/stem/pool", "unknown key"));
  EXPECT_TRUE(
      has_error(errors_of(training_doc(R"({"preset": "resnet50", "feature_pool": "flatten"})")),
                "/model/feature_pool", "does not apply to the resnet50 family"));
  // A classifier on a face-recognition resnet: the flattened 7 x 7 map is its features.
  EXPECT_TRUE(
      errors_of(training_doc(R"({"family": "classifier", "backbone": "resnet", "image_size": 112,
      "stem": {"kernel": 3, "stride": 1, "max_pool": false}, "feature_pool": "flatten",
      "stages": [{"blocks": 1, "width": 64, "stride": 2, "block": "basic"},
                 {"blocks": 1, "width": 128, "stride": 2, "block": "basic"},
                 {"blocks": 1, "width": 256, "stride": 2, "block": "basic"},
                 {"blocks": 1, "width": 512, "stride": 2, "block": "basic"}],
      "hidden": 25088, "embedding": 512, "classes": 1000})",
                             R"({"global_batch": 16})"))
          .empty());
}

TEST(TrainingLoader, OffloadLayers) {
  EXPECT_TRUE(
      errors_of(training_doc(kSmallGpt, R"({"global_batch": 16, "offload_layers": 2})")).empty());
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"offload_layers": -1})")),
                        "/training/offload_layers", "expected an integer >= 0"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"offload_layers": 5})")),
                        "/training/offload_layers",
                        "must be between 0 and the 4 blocks of the largest pipeline chunk"));
}

TEST(TrainingLoader, BatchSchedules) {
  EXPECT_TRUE(errors_of(training_doc(kSmallGpt, R"({"global_batch": 16, "total_tokens": 1e6,
      "batch_phases": [{"global_batch": 8, "samples": 100}]})"))
                  .empty());
  EXPECT_TRUE(errors_of(training_doc(kSmallGpt, R"({"global_batch": 32, "dataset_samples": 1000,
      "batch_rampup": {"start": 8, "increment": 8, "samples": 300}})"))
                  .empty());
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"global_batch": 16, "iterations": 10,
      "batch_phases": [{"global_batch": 8, "samples": 100}]})")),
                        "/training/batch_phases", "switches batches at sample counts"));
  EXPECT_TRUE(
      has_error(errors_of(training_doc(kSmallGpt, R"({"global_batch": 16, "total_tokens": 1e6,
      "batch_rampup": {"start": 4, "increment": 5, "samples": 300}})")),
                "/training/batch_rampup", "must be a multiple of increment (5)"));
  EXPECT_TRUE(
      has_error(errors_of(training_doc(kSmallGpt, R"({"global_batch": 16, "total_tokens": 1e6,
      "batch_phases": [{"global_batch": 8}]})")),
                "/training/batch_phases/0/samples", "missing required key"));
  EXPECT_TRUE(
      has_error(errors_of(training_doc(kSmallGpt, R"({"global_batch": 16, "total_tokens": 1e6,
      "batch_phases": []})")),
                "/training/batch_phases", "expected at least one phase"));
  EXPECT_TRUE(
      has_error(errors_of(training_doc(kSmallGpt, R"({"global_batch": 16, "total_tokens": 1e6,
      "batch_phases": [{"global_batch": 8, "samples": 100}]})",
                                       R"({"sync_every": 4})")),
                "/training/batch_phases", "local SGD"));
  EXPECT_TRUE(has_error(
      errors_of(training_doc(kSmallGpt, R"({"global_batch": 1000000000, "total_tokens": 1e6,
      "batch_rampup": {"start": 1, "increment": 1, "samples": 300}})")),
      "/training/batch_rampup", "at most 100000"));
  // A phase's batch that the plan cannot split is an error at the schedule.
  EXPECT_TRUE(
      has_error(errors_of(training_doc(kSmallGpt, R"({"global_batch": 16, "total_tokens": 1e6,
      "batch_phases": [{"global_batch": 7, "samples": 100}]})",
                                       R"({"tp": 2})")),
                "/training/batch_phases", "a phase's global batch"));
}

// Fine-grained MoE keys apply to the moe family only.
TEST(TrainingLoader, MoeKeysNeedTheMoeFamily) {
  EXPECT_TRUE(has_error(
      errors_of(training_doc(R"({"family": "gpt", "layers": 4, "hidden": 256, "heads": 8, "vocab": 1000, "seq_len": 64, "moe_ffn_hidden": 64})")),
      "/model/moe_ffn_hidden", "does not apply to the gpt family"));
  EXPECT_TRUE(has_error(
      errors_of(training_doc(R"({"preset": "mixtral-8x7b", "layers": 2, "first_dense_layers": 2})")),
      "/model/first_dense_layers", "leaves no MoE layer"));
  EXPECT_TRUE(errors_of(training_doc(
                  R"({"preset": "mixtral-8x7b", "layers": 2, "first_dense_layers": 1, "moe_ffn_hidden": 512, "shared_ffn_hidden": 256})"))
                  .empty());
}

TEST(TrainingLoader, PlanErrorsNameTheirKey) {
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"tp": 3})")),
                        "/parallelism", "does not divide the cluster's 8 ranks"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"dp": 4})")),
                        "/parallelism/dp", "leave dp out to derive it"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"virtual_stages": 2, "pp": 2})")),
                        "/parallelism/virtual_stages", "interleaved_1f1b"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"global_batch": 12, "micro_batch": 1})")),
                        "/training/global_batch", "not a multiple"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"ep": 2})")), "/parallelism/ep",
                        "mixture-of-experts"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"etp": 0})")),
                        "/parallelism/etp", "expected an integer"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"etp": 1})")),
                        "/parallelism/etp", "mixture-of-experts"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"stage_layers": [1, 2], "pp": 2})")),
                        "/parallelism/stage_layers", "sums to 3"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"stage_layers": "uneven"})")),
                        "/parallelism/stage_layers", "\"even\" or \"balanced\""));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"replica_micro_batch": 4})")),
                        "/parallelism/replica_micro_batch", "\"even\" or \"balanced\""));
  // Megatron-LM's context parallelism cuts a sequence into 2 x cp chunks; its tensor
  // parallelism divides the key-value heads.
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"seq_len": 66})", R"({"cp": 2})")),
                        "/parallelism/cp",
                        "sequence length 66 (training.seq_len) is not a multiple of 4"));
  EXPECT_TRUE(has_error(
      errors_of(training_doc(
          R"({"family": "gpt", "layers": 4, "hidden": 256, "heads": 8, "vocab": 1000, "seq_len": 66})",
          "{}", R"({"cp": 2})")),
      "/parallelism/cp", "sequence length 66 (the model's) is not a multiple of 4"));
  EXPECT_TRUE(errors_of(training_doc(kSmallGpt, R"({"seq_len": 68})", R"({"cp": 2})")).empty());
  EXPECT_TRUE(has_error(
      errors_of(training_doc(
          R"({"family": "gpt", "layers": 4, "hidden": 256, "heads": 8, "kv_heads": 2, "vocab": 1000, "seq_len": 64})",
          "{}", R"({"tp": 4})")),
      "/parallelism/tp", "must divide the model's 2 key-value heads"));
  // Tensor parallelism has nothing to split in a CNN; a dimension or a sequence the
  // family does not build from is an error rather than ignored.
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "resnet50"})", "{}", R"({"tp": 2})")),
                        "/parallelism/tp", "resnet50 (family resnet50) has no op it splits"));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "resnet50"})", "{}", R"({"cp": 2})")),
                        "/parallelism/cp", "needs a transformer model"));
  EXPECT_TRUE(errors_of(training_doc(R"({"preset": "classifier-100m", "classes": 1000000})",
                                     R"({"global_batch": 8})", R"({"tp": 2})"))
                  .empty());
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "resnet50", "vocab": 1000})")),
                        "/model/vocab",
                        "does not apply to the resnet50 family, which is built "
                        "from: name, classes, image_size"));
  EXPECT_TRUE(
      has_error(errors_of(training_doc(R"({"preset": "llama3-8b", "layers": 2, "classes": 10})")),
                "/model/classes", "does not apply to the llama family"));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "resnet50"})", R"({"seq_len": 512})")),
                        "/training/seq_len", "the resnet50 family takes no sequence"));
  // Dimensions far beyond any model are typos, stopped before they overflow a count or
  // exhaust memory.
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "gpt3-1.3b", "layers": 100000000})")),
                        "/model/layers", "must be at most 10000, got 100000000"));
  EXPECT_TRUE(
      has_error(errors_of(training_doc(R"({"preset": "gpt3-1.3b", "vocab": 9000000000000000000})")),
                "/model/vocab", "must be at most 100000000"));
  EXPECT_TRUE(has_error(
      errors_of(training_doc(R"({"preset": "gpt3-1.3b", "ffn_hidden": 4611686018427387904})")),
      "/model/ffn_hidden", "must be at most 4194304"));
  // Each within its bound, together past 64 bits of parameters.
  EXPECT_TRUE(has_error(
      errors_of(
          training_doc(R"({"family": "gpt", "layers": 10000, "hidden": 1048576, "heads": 1048576,
                                 "head_dim": 1048576, "vocab": 1000})")),
      "/model", "more than the 1e+15 a model may have"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, R"({"seq_len": 4000000000000})")),
                        "/training/seq_len", "expected an integer in 1..16777216"));
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "resnet50", "experts": 8})")),
                        "/model/experts", "does not apply to the resnet50 family"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"bucket": "0B"})")),
                        "/parallelism/bucket", "more than 0 bytes"));
  // A family without its dimensions: each missing key named, once; a preset of the wrong
  // type is a type error, not a missing family as well.
  const auto bare = errors_of(training_doc(R"({"family": "gpt"})"));
  EXPECT_TRUE(has_error(bare, "/model", "missing required key \"hidden\" for family \"gpt\""));
  EXPECT_TRUE(has_error(bare, "/model", "missing required key \"layers\""));
  const auto typed = errors_of(training_doc(R"({"preset": 5})"));
  EXPECT_TRUE(has_error(typed, "/model/preset", "expected a string"));
  EXPECT_EQ(typed.size(), 1u);
  EXPECT_TRUE(has_error(errors_of(training_doc(R"({"preset": "gpt3-1.3b", "heads": 7})")),
                        "/model", "hidden: must be divisible by heads (hidden 2048, heads 7)"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"axis_order": ["tp", "tp", "dp", "pp"]})")),
                        "/parallelism/axis_order", "once each"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"schedule": "1f2b"})")),
                        "/parallelism/schedule", "pipeline schedule"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"zero_stage": 4})")),
                        "/parallelism/zero_stage", ""));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"tp": 2, "tp_comm_overlap": true})")),
                        "/parallelism/tp_comm_overlap", "needs sequence_parallel"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"tp_comm_overlap": "yes"})")),
                        "/parallelism/tp_comm_overlap", "expected true or false"));
  EXPECT_TRUE(has_error(errors_of(training_doc(kSmallGpt, "{}", R"({"zero_stage": 1, "overlap_param_gather": false})")),
                        "/parallelism/overlap_param_gather", "applies to ZeRO-3 only (zero_stage is 1)"));
  for (const char* key : {"per_parameter_gather", "gather_copies_per_rank", "grad_all_reduce"}) {
    EXPECT_TRUE(has_error(
        errors_of(training_doc(kSmallGpt, "{}",
                               std::string(R"({"zero_stage": 2, ")") + key + R"(": true})")),
        std::string("/parallelism/") + key, "applies to ZeRO-3 only (zero_stage is 2)"));
  }
  EXPECT_TRUE(
      has_error(errors_of(training_doc(kSmallGpt, "{}",
                                       R"({"zero_stage": 3, "persistence_threshold": 100000})")),
                "/parallelism/persistence_threshold", "\"per_parameter_gather\": true"));
  EXPECT_TRUE(has_error(
      errors_of(training_doc(
          kSmallGpt, "{}",
          R"({"zero_stage": 3, "per_parameter_gather": true, "persistence_threshold": -1})")),
      "/parallelism/persistence_threshold", ""));
}

TEST(TrainingLoader, SectionsAndReferenceErrors) {
  // A training scenario has no workload section, and a reference needs its three keys.
  const std::string with_workload =
      std::string("{\"cluster\": ") + kCluster + R"(, "model": )" + kSmallGpt +
      R"(, "workload": {"kind": "collective", "ops": ["all_reduce"], "sizes": ["1MiB"]}})";
  EXPECT_TRUE(has_error(errors_of(with_workload), "/workload", "has no workload section"));
  const std::string no_model = std::string("{\"cluster\": ") + kCluster + R"(, "training": {}})";
  EXPECT_TRUE(has_error(errors_of(no_model), "", "needs \"model\""));
  const auto bad_ref = errors_of(training_doc(kSmallGpt, "{}", "{}",
                                              R"(, "reference": {"metric": "speed", "value": -1})"));
  EXPECT_TRUE(has_error(bad_ref, "/reference/source", ""));
  EXPECT_TRUE(has_error(bad_ref, "/reference/metric", "reference metric"));
  EXPECT_TRUE(has_error(bad_ref, "/reference/value", ""));
}

TEST(TrainingLoader, ReferenceSizesAndLegacyStacks) {
  // A collective reference is given size by size, increasing, and has no single value.
  const auto sizes = errors_of(
      training_doc(kSmallGpt, "{}", "{}",
                   R"(, "reference": {"source": "s", "metric": "collective_time_us", "value": 3,
           "sizes": [{"bytes": 2048, "time_us": 5}, {"bytes": 1024, "time_us": 4},
                     {"bytes": 4096, "time_us": -1}]})"));
  EXPECT_TRUE(has_error(sizes, "/reference/value", "size by size"));
  EXPECT_TRUE(
      has_error(sizes, "/reference/sizes/1/bytes", "increasing order, got 1024 after 2048"));
  EXPECT_TRUE(has_error(sizes, "/reference/sizes/2/time_us", ""));
  // ...and a training figure is not.
  const auto value = errors_of(training_doc(
      kSmallGpt, "{}", "{}",
      R"(, "reference": {"source": "s", "metric": "mfu", "value": 0.4, "sizes": []})"));
  EXPECT_TRUE(has_error(value, "/reference/sizes", "only a collective_time_us reference"));
  // A case whose stack is not modelled says why.
  const auto legacy = errors_of(training_doc(
      kSmallGpt, "{}", "{}",
      R"(, "reference": {"source": "s", "metric": "mfu", "value": 0.4, "stack_modelled": false})"));
  EXPECT_TRUE(has_error(legacy, "/reference/stack_note", "says why"));
  const auto prepared = test_support::prepare(
      json::parse(training_doc(kSmallGpt, "{}", "{}",
                               R"(, "reference": {"source": "s", "metric": "mfu", "value": 0.4,
                                   "stack_modelled": false, "stack_note": "old"})")),
      "t.json");
  ASSERT_TRUE(prepared->lowered.reference.has_value());
  EXPECT_FALSE(prepared->lowered.reference->stack_modelled);
  EXPECT_EQ(prepared->lowered.reference->stack_note, "old");
}

TEST(TrainingLoader, OverridesReachTheTrainingKeys) {
  const auto s_prepared =
      test_support::prepare(json::parse(training_doc(kSmallGpt, R"({"global_batch": 8})")),
                            "t.json", {"parallelism.tp=4", "training.micro_batch=2"});
  const LoweredScenario& s = s_prepared->lowered;
  EXPECT_EQ(s.training->step.plan.tp, 4);
  EXPECT_EQ(s.training->step.plan.dp, 2);
  EXPECT_EQ(s.training->step.micro_batches, 2);
}

}  // namespace
}  // namespace dtsim
