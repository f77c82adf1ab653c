// dtsim validate for real: two MPI ranks run the data-parallel transformer's step and the
// report holds the measured and predicted figures; a rank that is killed or hangs ends the
// run with an error naming it and its last task, and no rank process is left behind.
#include "runner/real_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "executor/progress_board.h"
#include "runner/cpu_quota.h"
#include "runner/emulated_network.h"
#include "runner/rank_timeline_file.h"

namespace dtsim {
namespace {

const std::string kCase =
    std::string(DTSIM_SOURCE_DIR) + "/scenarios/validation/real/dp-transformer.json";

std::filesystem::path scratch(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("dtsim-validate-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(p);
  return p;
}

// A process is gone when /proc has no entry for it, or only a zombie's (whose reaping is
// init's job once mpirun, its parent, has exited).
bool gone(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

// Waits until rank `rank` of the run in `folder` is inside a step, and returns its pid.
// The pid of `rank` once it is in its second step; 0 when the run ended first (its error,
// or that it returned, goes to `why`) or two minutes passed.
int64_t wait_for_step(const std::filesystem::path& folder, int rank,
                      std::future<RealValidation>& run, std::string& why) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < until) {
    if (auto p = executor::read_progress(rank_progress_path(folder, rank)); p && p->step >= 2) {
      return p->pid;
    }
    if (run.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready) {
      try {
        run.get();
        why = "the run returned before the rank's second step";
      } catch (const std::exception& e) {
        why = std::string("the run ended first: ") + e.what();
      }
      return 0;
    }
  }
  why = "no progress within two minutes";
  return 0;
}

RealRunOptions long_run(const std::filesystem::path& folder) {
  RealRunOptions o;
  o.scenario = kCase;
  o.rank_program = DTSIM_RANK;
  o.warmup = 0;
  o.iterations = 10000;  // far longer than the test waits: only a failure ends it
  o.timeout = std::chrono::seconds(60);
  o.folder = folder;
  return o;
}

TEST(RealValidation, TheCliRunsTheStepForRealAndWritesTheReport) {
  const auto out = scratch("cli");
  const std::string command = std::string(DTSIM_BINARY) + " validate " + kCase +
                              " --iterations 3 --warmup 1 --out " + out.string() + " > " +
                              (out.string() + ".log") + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << std::ifstream(out.string() + ".log").rdbuf();
  std::ifstream in(out / "validation.json");
  const nlohmann::json v = nlohmann::json::parse(in);
  EXPECT_EQ(v["format"], "dtsim-validation");
  EXPECT_EQ(v["ranks"], 2);
  EXPECT_EQ(v["iterations"], 3);
  EXPECT_EQ(v["measured_steps_s"].size(), 3u);
  const double measured = v["measured_step_s"];
  const double predicted = v["predicted_step_s"];
  EXPECT_GT(measured, 0);
  EXPECT_GT(predicted, 0);
  EXPECT_LE(v["measured_step_p10_s"].get<double>(), measured);
  EXPECT_GE(v["measured_step_p90_s"].get<double>(), measured);
  EXPECT_NEAR(v["error"].get<double>(), (predicted - measured) / measured, 1e-9);
  // Every kind that ran, every rank, every task of the graph.
  std::set<std::string> kinds;
  for (const auto& k : v["per_kind"]) kinds.insert(k["kind"].get<std::string>());
  EXPECT_TRUE(kinds.contains("compute"));
  EXPECT_TRUE(kinds.contains("collective"));
  ASSERT_EQ(v["per_rank"].size(), 2u);
  for (const auto& r : v["per_rank"]) {
    EXPECT_GT(r["measured_s"].get<double>(), 0);
    EXPECT_GE(r["clock_uncertainty_ns"].get<int64_t>(), 0);
    EXPECT_GT(r["operand_bytes"].get<int64_t>(), 0);
  }
  for (const auto& t : v["tasks"]) {
    if (t["kind"] == "compute") {
      EXPECT_GT(t["measured_s"].get<double>(), 0) << t.dump();
    }
  }
  // The trace: a measured and a predicted process, the same tasks in each.
  std::ifstream trace_in(out / "trace.json");
  const nlohmann::json trace = nlohmann::json::parse(trace_in);
  std::map<int, int> spans;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") ++spans[e["pid"].get<int>()];
  }
  EXPECT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[1], spans[2]);
  EXPECT_EQ(spans[1], static_cast<int>(v["tasks"].size()));
  std::ifstream md(out / "validation.md");
  std::stringstream text;
  text << md.rdbuf();
  EXPECT_NE(text.str().find("| step |"), std::string::npos);
  std::filesystem::remove_all(out);
  std::filesystem::remove(out.string() + ".log");
}

TEST(RealValidation, AKilledRankEndsTheRunNamingItAndLeavesNoProcess) {
  const auto folder = scratch("killed");
  auto run = std::async(std::launch::async, [&] { return validate_for_real(long_run(folder)); });
  std::string why;
  const int64_t victim = wait_for_step(folder, 1, run, why);
  ASSERT_GT(victim, 0) << "rank 1 never reached its second step: " << why;
  const auto other = executor::read_progress(rank_progress_path(folder, 0));
  ASSERT_TRUE(other);
  ASSERT_EQ(::kill(static_cast<pid_t>(victim), SIGKILL), 0);
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "the run did not end after its rank was killed";
  try {
    run.get();
    FAIL() << "expected the run to fail";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 1 (pid " + std::to_string(victim) + ") stopped in step"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("last started: task"), std::string::npos) << m;
  }
  EXPECT_TRUE(gone(victim));
  EXPECT_TRUE(gone(other->pid)) << "rank 0 (pid " << other->pid << ") outlived the run";
  std::filesystem::remove_all(folder);
}

TEST(RealValidation, AHungRankEndsTheRunAtItsTimeoutAndLeavesNoProcess) {
  const auto folder = scratch("hung");
  RealRunOptions o = long_run(folder);
  o.timeout = std::chrono::seconds(15);
  auto run = std::async(std::launch::async, [&] { return validate_for_real(o); });
  std::string why;
  const int64_t victim = wait_for_step(folder, 1, run, why);
  ASSERT_GT(victim, 0) << "rank 1 never reached its second step: " << why;
  const auto other = executor::read_progress(rank_progress_path(folder, 0));
  ASSERT_TRUE(other);
  // A stopped process neither exits nor answers: to its peers it hangs.
  ASSERT_EQ(::kill(static_cast<pid_t>(victim), SIGSTOP), 0);
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "the run outlived its time-out";
  try {
    run.get();
    FAIL() << "expected the run to fail";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("did not finish before its deadline"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1 (pid " + std::to_string(victim) + ")"), std::string::npos) << m;
  }
  EXPECT_TRUE(gone(victim));
  EXPECT_TRUE(gone(other->pid));
  std::filesystem::remove_all(folder);
}

TEST(RealValidation, RefusesMoreRanksThanCoresBeforeStartingAny) {
  const auto folder = scratch("ranks");
  RealRunOptions o = long_run(folder);
  o.overrides = {"cluster.nodes.0.devices_per_node=64", "training.global_batch=256"};
  EXPECT_THROW(validate_for_real(o), InputError);
  EXPECT_FALSE(std::filesystem::exists(rank_progress_path(folder, 0)));
}

// Latent attention is simulated only: refused at its key before any rank starts.
TEST(RealValidation, RefusesLatentAttentionBeforeStartingAny) {
  const auto folder = scratch("mla");
  RealRunOptions o = long_run(folder);
  o.overrides = {
      "model={\"family\": \"llama\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, "
      "\"ffn_hidden\": 128, \"vocab\": 512, \"kv_lora_rank\": 16, "
      "\"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 4, \"v_head_dim\": 8}"};
  try {
    validate_for_real(o);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("/model: multi-head latent attention"));
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("simulated only"));
  }
  EXPECT_FALSE(std::filesystem::exists(rank_progress_path(folder, 0)));
}

// Namespaces this test process made (EmulatedNetwork names them dtsim-<pid>-<n>-r<rank>).
std::vector<std::string> our_namespaces() {
  std::vector<std::string> out;
  const std::string prefix = "dtsim-" + std::to_string(::getpid()) + "-";
  if (!std::filesystem::exists("/var/run/netns")) return out;
  for (const auto& e : std::filesystem::directory_iterator("/var/run/netns")) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().filename());
  }
  return out;
}

const std::string kGeoCase =
    std::string(DTSIM_SOURCE_DIR) + "/scenarios/validation/real/geo-2ranks-100mbit-20ms.json";

// A short run of `scenario` over emulated links: one warm-up and two measured steps.
RealRunOptions emulated_run(const std::string& scenario, const std::filesystem::path& folder) {
  RealRunOptions o;
  o.scenario = scenario;
  o.rank_program = DTSIM_RANK;
  o.emulate_links = true;
  o.link_emulator = DTSIM_LINK_EMULATOR;
  o.warmup = 1;
  o.iterations = 2;
  o.timeout = std::chrono::minutes(2);
  o.folder = folder;
  return o;
}

TEST(RealValidation, TheGeoCaseRunsOverItsEmulatedWanAndLeavesNoNamespace) {
  if (const std::string why = emulation_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const auto folder = scratch("geo");
  const RealValidation v = validate_for_real(emulated_run(kGeoCase, folder));
  // The 22 MB gradient all-reduce crosses a 100 Mbit/s link: each rank sends and receives
  // its 22 MB once (ring of two), at least 1.76 s, which the prediction holds too.
  const auto collective =
      std::find_if(v.comparison.kinds.begin(), v.comparison.kinds.end(),
                   [](const auto& k) { return k.kind == TaskKind::kCollective; });
  ASSERT_NE(collective, v.comparison.kinds.end());
  EXPECT_GT(collective->busy.measured_s, 2 * 1.76);
  EXPECT_GT(v.comparison.step.predicted_s, 1.76);
  EXPECT_GT(v.comparison.step.measured_s, 1.76);
  EXPECT_TRUE(our_namespaces().empty());
  std::filesystem::remove_all(folder);
}

// One rank of two at half a core: its compute threads run their kernels under its CPU quota
// (cgroup v1; under v2 the launch agent puts the whole rank in it), so its compute takes as
// much longer against the full-speed rank's as the
// simulator says (the ratio of the two ranks' compute, measured over predicted, near 1; it
// would be near 0.5 if the quota had not taken), and the cgroups are gone afterwards.
TEST(RealValidation, TheSlowerRankRunsUnderItsCpuQuotaAndNothingIsLeft) {
  if (const std::string why = emulation_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  if (const CpuCgroupRoot root = find_cpu_cgroup_root(); root.root.empty()) {
    GTEST_SKIP() << root.why;
  }
  const auto folder = scratch("hetero");
  const RealValidation v = validate_for_real(emulated_run(
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/validation/real/hetero-2ranks.json", folder));
  ASSERT_EQ(v.comparison.ranks.size(), 2u);
  const executor::ErrorFigure& fast = v.comparison.ranks[0].compute_busy;
  const executor::ErrorFigure& slow = v.comparison.ranks[1].compute_busy;
  ASSERT_GT(fast.measured_s, 0);
  ASSERT_GT(fast.predicted_s, 0);
  const double ratio = (slow.measured_s / fast.measured_s) / (slow.predicted_s / fast.predicted_s);
  EXPECT_GT(ratio, 0.75) << slow.measured_s << " / " << fast.measured_s << " measured, "
                         << slow.predicted_s << " / " << fast.predicted_s << " predicted";
  EXPECT_LT(ratio, 1.33);
  const std::filesystem::path quotas =
      find_cpu_cgroup_root().root / ("dtsim-" + std::to_string(::getpid()));
  EXPECT_FALSE(std::filesystem::exists(quotas));
  EXPECT_TRUE(our_namespaces().empty());
  std::filesystem::remove_all(folder);
}

TEST(RealValidation, AKilledRankOverEmulatedLinksLeavesNoNamespaceOrProcess) {
  if (const std::string why = emulation_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const auto folder = scratch("geo-killed");
  RealRunOptions o = long_run(folder);
  o.scenario = kGeoCase;
  o.emulate_links = true;
  o.link_emulator = DTSIM_LINK_EMULATOR;
  auto run = std::async(std::launch::async, [&] { return validate_for_real(o); });
  std::string why;
  const int64_t victim = wait_for_step(folder, 1, run, why);
  ASSERT_GT(victim, 0) << "rank 1 never reached its second step: " << why;
  EXPECT_EQ(our_namespaces().size(), 2u);
  ASSERT_EQ(::kill(static_cast<pid_t>(victim), SIGKILL), 0);
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_THROW(run.get(), std::runtime_error);
  EXPECT_TRUE(gone(victim));
  EXPECT_TRUE(our_namespaces().empty());
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace dtsim
