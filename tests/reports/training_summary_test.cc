// Training summary figures: MFU counts each device's peak for the math its GEMMs actually
// run in, throughput and time to train follow from the iteration, per-rank times add up
// to it (local SGD included), and the plan as resolved (balanced micro-batches, TP
// shares) is reported.
#include "reports/training_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "reports/csv_tables.h"
#include "reports/summary.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"
#include "sim/device_catalog.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

nlohmann::ordered_json summary_of(const std::string& path, std::vector<std::string> overrides) {
  overrides.push_back("simulation.trace=false");
  const auto s_prepared =
      test_support::prepare_file(std::string(DTSIM_SOURCE_DIR) + "/" + path, overrides);
  const LoweredScenario& s = s_prepared->lowered;
  return make_training_summary(s, run_scenario(s_prepared->scenario, s));
}

// Each rank's compute, exposed communication, waiting (bubble and collective peers) and
// idle time add up to the iteration.
void expect_rank_times_add_up_to(const nlohmann::ordered_json& t, double iteration) {
  for (const auto& r : t["ranks"]) {
    const double sum = r["compute_s"].get<double>() + r["exposed_comm_s"].get<double>() +
                       r["bubble_s"].get<double>() + r["waiting_s"].get<double>() +
                       r["idle_s"].get<double>();
    EXPECT_NEAR(sum, iteration, 1e-6 * iteration) << r["rank"];
  }
}

TEST(TrainingSummary, MfuUsesThePeakTheGemmsRunAt) {
  // Mixed precision on a P40: fp16 storage, but its fp16 math runs at 1/64 rate, so the
  // GEMMs run in fp32 and MFU is over the fp32 peak, not the fp16 one (which gave 2,000%).
  const auto t = summary_of("scenarios/validation/jia2018-alexnet-1024xP40.json",
                            {"cluster.nodes.0.count=2", "training.global_batch=1024"});
  const double fp32 = find_builtin_device("P40")->peak_for(DType::kFp32).flops_per_second();
  const double achieved = t["achieved_tflops_per_device"].get<double>() * 1e12;
  EXPECT_GT(achieved, 0);
  EXPECT_NEAR(t["mfu"].get<double>(), achieved / fp32, 1e-12);
  EXPECT_LT(t["mfu"].get<double>(), 1);
}

TEST(TrainingSummary, MfuOnTensorCoresUsesTheTensorCorePeak) {
  const auto t = summary_of("scenarios/examples/llama3-70b-64xH100.json", {});
  const double bf16 = find_builtin_device("H100")->peak_for(DType::kBf16).flops_per_second();
  EXPECT_NEAR(t["mfu"].get<double>(), t["achieved_tflops_per_device"].get<double>() * 1e12 / bf16,
              1e-12);
}

TEST(TrainingSummary, ReportsTheResolvedHeterogeneousPlan) {
  // Balanced replicas on the A100 + V100 example: the split chosen, per replica and per
  // rank, and the note saying it was balanced.
  const auto t = summary_of("scenarios/examples/hetero-a100-v100-gpt.json",
                            {"parallelism.pp=1", "training.micro_batch=4",
                             "parallelism.stage_layers=even",
                             "parallelism.replica_micro_batch=balanced",
                             "parallelism.tp_shares=[0.125,0.125,0.125,0.125,0.125,0.125,0.125,0.125]"});
  const auto& plan = t["plan"];
  ASSERT_EQ(plan["replica_micro_batch"].size(), 4u);
  int64_t sum = 0;
  for (const auto& b : plan["replica_micro_batch"]) sum += b.get<int64_t>();
  EXPECT_EQ(sum, 16);
  // The A100 replicas (ranks 0-15) take more than the V100 ones (ranks 16-31).
  EXPECT_GT(plan["replica_micro_batch"][0].get<int64_t>(), plan["replica_micro_batch"][3].get<int64_t>());
  EXPECT_EQ(t["ranks"][0]["micro_batch"], plan["replica_micro_batch"][0]);
  EXPECT_EQ(t["ranks"][31]["micro_batch"], plan["replica_micro_batch"][3]);
  EXPECT_EQ(plan["tp_shares"].size(), 8u);
  EXPECT_FALSE(plan["shard_classifier"].get<bool>());
  ASSERT_EQ(t["notes"].size(), 1u);
  EXPECT_EQ(t["notes"][0], "replica micro-batches balanced by device speed");
}

// Throughput and time to train follow from the iteration time and the batch: 1e12 tokens
// over 64 x 8192 tokens per iteration is ceil(1,907,348.6) iterations.
TEST(TrainingSummary, ThroughputAndTimeToTrainFollowFromTheIteration) {
  const auto t = summary_of("scenarios/examples/geo-2regions-llama3-8b.json",
                            {"model.layers=4", "parallelism.sync_every=1"});
  const double iteration = t["iteration_time_s"].get<double>();
  ASSERT_GT(iteration, 0);
  EXPECT_EQ(t["samples_per_iteration"].get<int64_t>(), 64);
  EXPECT_EQ(t["tokens_per_iteration"].get<int64_t>(), 64 * 8192);
  EXPECT_DOUBLE_EQ(t["samples_per_s"].get<double>(), 64 / iteration);
  EXPECT_DOUBLE_EQ(t["tokens_per_s"].get<double>(), 64 * 8192 / iteration);
  EXPECT_DOUBLE_EQ(t["iterations_to_train"].get<double>(), 1907349);
  EXPECT_DOUBLE_EQ(t["time_to_train_s"].get<double>(), 1907349 * iteration);
  expect_rank_times_add_up_to(t, iteration);
}

// Megatron-LM's ramp-up from 16 to 64 by 16 over 300,000 samples of a 10^10-token run of
// 8,192-token sequences (1,220,703 samples): 6,250 steps at 16, 3,125 at 32, 2,084 at 48
// (the last overshoots to 300,032), then 14,386 at 64; each phase's step simulated.
TEST(TrainingSummary, BatchRampUpRunsEachPhaseAtItsOwnStep) {
  const auto t =
      summary_of("scenarios/examples/llama3-70b-64xH100.json",
                 {"training.total_tokens=1e10",
                  R"(training.batch_rampup={"start": 16, "increment": 16, "samples": 300000})"});
  const auto& run = t["run"];
  ASSERT_EQ(run["batch_phases"].size(), 3u);
  std::vector<double> steps;
  double time = 0;
  for (const auto& [batch, iterations, i] :
       {std::tuple{16, 6250, 0}, std::tuple{32, 3125, 1}, std::tuple{48, 2084, 2}}) {
    const auto& p = run["batch_phases"][static_cast<size_t>(i)];
    EXPECT_EQ(p["global_batch"], batch);
    EXPECT_EQ(p["iterations"], iterations);
    EXPECT_TRUE(p["simulated"].get<bool>());
    steps.push_back(p["iteration_time_s"].get<double>());
    time += iterations * steps.back();
  }
  EXPECT_EQ(run["main_iterations"].get<double>(), 14386);
  EXPECT_EQ(t["iterations_to_train"].get<double>(), 6250 + 3125 + 2084 + 14386);
  const double iteration = t["iteration_time_s"].get<double>();
  time += 14386 * iteration;
  EXPECT_NEAR(run["steps_s"].get<double>(), time, 1e-9 * time);
  // Four micro-batches more per replica each phase: the step grows by the same amount.
  EXPECT_LT(steps[0], steps[1]);
  EXPECT_NEAR(steps[2] - steps[1], steps[1] - steps[0], 0.01 * steps[0]);
  EXPECT_NEAR(iteration - steps[2], steps[1] - steps[0], 0.01 * steps[0]);
  // A run of 10^9 tokens (122,070 samples) ends in the second phase: 6,250 steps at 16,
  // 690 at 32 (22,070 samples), none at 48, which is not simulated.
  const auto short_run =
      summary_of("scenarios/examples/llama3-70b-64xH100.json",
                 {"training.total_tokens=1e9",
                  R"(training.batch_rampup={"start": 16, "increment": 16, "samples": 300000})"});
  const auto& phases = short_run["run"]["batch_phases"];
  EXPECT_EQ(phases[1]["iterations"], 690);
  EXPECT_EQ(phases[2]["iterations"], 0);
  EXPECT_FALSE(phases[2]["simulated"].get<bool>());
  EXPECT_EQ(short_run["run"]["main_iterations"].get<double>(), 0);
}

// With local SGD every eighth step synchronizes: the iteration time and each rank's times
// weigh the local step 7/8 and the synchronizing one 1/8, so the ranks' times still add
// up to the iteration.
TEST(TrainingSummary, LocalSgdRankTimesAverageBothSteps) {
  const auto s_prepared = test_support::prepare_file(
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/geo-2regions-llama3-8b.json",
      {"model.layers=4", "simulation.trace=false"});
  const LoweredScenario& s = s_prepared->lowered;
  const ScenarioRun run = run_scenario(s_prepared->scenario, s);
  const auto t = make_training_summary(s, run);
  const double local = t["local_iteration_time_s"].get<double>();
  const double sync = t["sync_iteration_time_s"].get<double>();
  ASSERT_GT(sync, local);
  const double iteration = t["iteration_time_s"].get<double>();
  EXPECT_NEAR(iteration, (7 * local + sync) / 8, 1e-12 * sync);
  expect_rank_times_add_up_to(t, iteration);
  // ranks.csv carries the same per-iteration figures.
  std::ostringstream csv;
  write_ranks_csv(csv, s, run);
  std::istringstream lines(csv.str());
  std::string header, rank0;
  std::getline(lines, header);
  std::getline(lines, rank0);
  std::vector<std::string> fields;
  for (std::stringstream row(rank0); std::getline(row, fields.emplace_back(), ',');) {
  }
  ASSERT_GT(fields.size(), 7u);
  EXPECT_NEAR(std::stod(fields[5]), t["ranks"][0]["compute_s"].get<double>(), 1e-8);
  EXPECT_NEAR(std::stod(fields[7]), t["ranks"][0]["exposed_comm_s"].get<double>(), 1e-8);
}

// Balancing the A100 + V100 pipeline for GPT-3 13B by time alone would put the A100 stages
// over their 40 GiB (8 ranks, 1.2 GiB over); the balanced split keeps every stage within
// memory and is still far faster than the even one. A model that fits no split is
// balanced by time, and the note says so.
TEST(TrainingSummary, BalancedStagesFitTheirMemory) {
  const std::vector<std::string> big{"model.preset=gpt3-13b", "training.global_batch=32"};
  auto with = [&](std::string stage_layers, std::vector<std::string> more) {
    more.push_back("parallelism.stage_layers=" + stage_layers);
    return summary_of("scenarios/examples/hetero-a100-v100-gpt.json", more);
  };
  const auto balanced = with("balanced", big);
  const auto even = with("even", big);
  EXPECT_EQ(balanced["oom_ranks"], 0);
  EXPECT_EQ(even["oom_ranks"], 0);
  EXPECT_LT(balanced["iteration_time_s"].get<double>(),
            0.5 * even["iteration_time_s"].get<double>());
  const auto& notes = balanced["notes"];
  EXPECT_EQ(std::count(notes.begin(), notes.end(),
                       "no balanced split fits every stage's memory: balanced by time"),
            0);
  const auto huge = with("balanced", {"model.preset=gpt3-175b", "training.global_batch=8"});
  EXPECT_GT(huge["oom_ranks"].get<int>(), 0);
  const auto& huge_notes = huge["notes"];
  EXPECT_EQ(std::count(huge_notes.begin(), huge_notes.end(),
                       "no balanced split fits every stage's memory: balanced by time"),
            1);
}

// The printed plan line names sequence parallelism only where it shards something (tp > 1),
// and the batch line counts micro-batches in the singular when there is one.
TEST(TrainingSummary, PrintedPlanAndBatchLines) {
  auto text_of = [](std::vector<std::string> overrides) {
    overrides.push_back("simulation.trace=false");
    const auto s_prepared = test_support::prepare_file(
        std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/llama3-70b-64xH100.json", overrides);
    const LoweredScenario& s = s_prepared->lowered;
    return format_summary_text(make_summary(s, run_scenario(s_prepared->scenario, s)));
  };
  const std::string tp8 = text_of({"model.layers=8", "training.global_batch=8"});
  EXPECT_NE(tp8.find(", sequence parallel\n"), std::string::npos) << tp8;
  EXPECT_NE(tp8.find("8 samples, 4 micro-batches per replica"), std::string::npos) << tp8;
  const std::string tp1 = text_of({"model.layers=8", "parallelism.tp=1", "parallelism.pp=1",
                                   "training.global_batch=64", "training.seq_len=1024"});
  EXPECT_EQ(tp1.find("sequence parallel"), std::string::npos) << tp1;
  EXPECT_NE(tp1.find("64 samples, 1 micro-batch per replica"), std::string::npos) << tp1;
}

}  // namespace
}  // namespace dtsim
