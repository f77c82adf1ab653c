// End-to-end tests of the `dtsim` command: outputs, determinism, exit codes, list, sweep.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

TEST(Cli, RunWritesSummaryTraceAndTables) {
  const fs::path out = scratch("run");
  const Result r = dtsim("run " + example("allreduce-8xH100-nvswitch.json") + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("busbw GB/s"), std::string::npos) << r.output;

  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  for (const char* key : {"simulated_time_s", "wall_time_s", "events", "network_model", "collectives"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  EXPECT_EQ(summary["network_model"], "flow");
  // How the flow model's max-min solves were settled, each solve one way.
  ASSERT_TRUE(summary.contains("flow_solver"));
  const auto& solver = summary["flow_solver"];
  EXPECT_GT(solver["solves"].get<uint64_t>(), 0u);
  EXPECT_EQ(solver["solves"].get<uint64_t>(), solver["settled_in_place"].get<uint64_t>() +
                                                  solver["affected_sets"].get<uint64_t>() +
                                                  solver["whole_components"].get<uint64_t>());
  EXPECT_NE(r.output.find("flow solver"), std::string::npos) << r.output;
  // The trace watches the links, so no phase is replayed; without it, the second and third
  // runs of each call replay its phases and take the same time to the nanosecond.
  ASSERT_TRUE(summary.contains("replayed_phases"));
  EXPECT_EQ(summary["replayed_phases"].get<int64_t>(), 0);
  EXPECT_NE(r.output.find("phases replayed"), std::string::npos) << r.output;
  {
    const fs::path again = scratch("run-replayed");
    const Result q =
        dtsim("run " + example("allreduce-8xH100-nvswitch.json") +
              " --set simulation.trace=false --set workload.iterations=3 --out " + again.string());
    ASSERT_EQ(q.exit_code, 0) << q.output;
    const auto replayed = nlohmann::json::parse(slurp(again / "summary.json"));
    EXPECT_GT(replayed["replayed_phases"].get<int64_t>(), 0);
    ASSERT_EQ(replayed["collectives"].size(), 3 * summary["collectives"].size());
    for (size_t i = 0; i < replayed["collectives"].size(); ++i) {
      EXPECT_EQ(replayed["collectives"][i]["time_s"], summary["collectives"][i / 3]["time_s"]) << i;
    }
  }
  const auto& colls = summary["collectives"];
  ASSERT_EQ(colls.size(), 18u);  // 6 sizes x 3 algorithms
  for (const auto& c : colls) {
    for (const char* key : {"op", "algorithm", "bytes", "ranks", "time_s", "algbw_GBps", "busbw_GBps"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
    EXPECT_NE(c["algorithm"], "auto");  // resolved
    const double algbw = c["bytes"].get<double>() / c["time_s"].get<double>() / 1e9;
    EXPECT_NEAR(c["algbw_GBps"].get<double>(), algbw, 1e-9 * algbw);
    // nccl-tests: all-reduce busbw = algbw x 2(n-1)/n.
    EXPECT_NEAR(c["busbw_GBps"].get<double>(), algbw * 2 * 7 / 8, 1e-9 * algbw);
  }
  // A 1 GiB ring on NVSwitch reaches most of what the H100's NVLink carries after its
  // protocol overhead, 0.8 x 450 = 360 GB/s (NCCL measures 365-370 GB/s busbw there).
  bool found = false;
  for (const auto& c : colls) {
    if (c["algorithm"] == "ring" && c["bytes"] == int64_t{1} << 30) {
      EXPECT_GT(c["busbw_GBps"].get<double>(), 340);
      EXPECT_LE(c["busbw_GBps"].get<double>(), 360);
      found = true;
    }
  }
  EXPECT_TRUE(found);

  const auto trace = nlohmann::json::parse(slurp(out / "trace.json"));
  bool rank_track = false, link_track = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      const std::string n = e["args"]["name"];
      rank_track |= n.rfind("rank 0", 0) == 0;
      link_track |= n == "links";
    }
  }
  EXPECT_TRUE(rank_track);
  EXPECT_TRUE(link_track);

  std::istringstream ranks(slurp(out / "ranks.csv"));
  std::string line;
  int rows = 0;
  while (std::getline(ranks, line)) ++rows;
  EXPECT_EQ(rows, 1 + 8);
  EXPECT_EQ(slurp(out / "links.csv").rfind("link,src,dst,kind,bandwidth_Bps", 0), 0u);
}

TEST(Cli, SameScenarioTwiceGivesByteIdenticalOutputs) {
  const fs::path a = scratch("det_a"), b = scratch("det_b");
  const std::string scenario = example("taskgraph-dp-overlap.json");
  ASSERT_EQ(dtsim("run " + scenario + " --no-timing --quiet --out " + a.string()).exit_code, 0);
  ASSERT_EQ(dtsim("run " + scenario + " --no-timing --quiet --out " + b.string()).exit_code, 0);
  for (const char* f : {"summary.json", "trace.json", "ranks.csv", "links.csv"}) {
    const std::string x = slurp(a / f), y = slurp(b / f);
    EXPECT_FALSE(x.empty()) << f;
    EXPECT_EQ(x, y) << f << " differs between two runs";
  }
  EXPECT_EQ(nlohmann::json::parse(slurp(a / "summary.json")).count("wall_time_s"), 0u);
}

TEST(Cli, ExitCodes) {
  EXPECT_EQ(dtsim("--help").exit_code, 0);
  EXPECT_EQ(dtsim("run --help").exit_code, 0);
  EXPECT_EQ(dtsim("sweep --help").exit_code, 0);
  EXPECT_EQ(dtsim("frobnicate").exit_code, 2);
  EXPECT_EQ(dtsim("run").exit_code, 2);
  const Result missing = dtsim("run /nonexistent/scenario.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("/nonexistent/scenario.json"), std::string::npos) << missing.output;
  const Result bad_set = dtsim("check " + example("allreduce-8xH100-nvswitch.json") +
                               " --set cluster.nodes.0.nic_bandwidth=40OGbps");
  EXPECT_EQ(bad_set.exit_code, 2);
  EXPECT_NE(bad_set.output.find("/cluster/nodes/0/nic_bandwidth"), std::string::npos) << bad_set.output;
  EXPECT_EQ(dtsim("list gadgets").exit_code, 2);
}

TEST(Cli, CheckValidatesWithoutRunning) {
  const Result r = dtsim("check " + example("allreduce-2048xV100-2dtorus.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2048 ranks"), std::string::npos) << r.output;
}

TEST(Cli, CheckSaysWhichRanksRunAlike) {
  // Llama 3 70B on 64 H100s, TP 8 x PP 4 x DP 2: with every unit at one speed, the 8
  // tensor-parallel ranks of a stage's replica run alike (the replicas split first: their
  // data-parallel calls have the fewest members). With speeds drawn per unit, none do.
  const std::string scenario = example("llama3-70b-64xH100.json");
  const Result same = dtsim("check " + scenario + " --set cluster.speed_variation=0");
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("ranks alike: 8 classes of up to 8 ranks; one rank of each stands "
                             "for the rest in every call and message"),
            std::string::npos)
      << same.output;
  const Result drawn = dtsim("check " + scenario);
  EXPECT_EQ(drawn.exit_code, 0) << drawn.output;
  EXPECT_NE(drawn.output.find("ranks alike: 64 classes of up to 1 rank\n"), std::string::npos)
      << drawn.output;
}

TEST(Cli, ListsRegistries) {
  const Result devices = dtsim("list devices");
  EXPECT_EQ(devices.exit_code, 0);
  for (const char* d : {"H100", "H200", "A100-80GB", "V100", "P100", "P40", "CPU"}) {
    EXPECT_NE(devices.output.find(d), std::string::npos) << d;
  }
  EXPECT_NE(devices.output.find(" sust "), std::string::npos) << devices.output;
  const Result networks = dtsim("list networks");
  EXPECT_NE(networks.output.find("flow"), std::string::npos);
  EXPECT_NE(networks.output.find("analytical"), std::string::npos);
  const Result colls = dtsim("list collectives");
  for (const char* a : {"ring", "tree", "halving_doubling", "hierarchical", "torus2d", "cross_region"}) {
    EXPECT_NE(colls.output.find(a), std::string::npos) << a;
  }
  const Result models = dtsim("list models");
  EXPECT_EQ(models.exit_code, 0);
  for (const char* m : {"gpt3-175b", "gpt3-1.3b", "llama3-8b", "llama3-70b", "llama3.1-405b",
                        "mixtral-8x7b", "bert-large", "resnet50", "alexnet", "vgg16"}) {
    EXPECT_NE(models.output.find(m), std::string::npos) << m;
  }
  const Result schedules = dtsim("list schedules");
  for (const char* s : {"gpipe", "1f1b", "interleaved_1f1b"}) {
    EXPECT_NE(schedules.output.find(s), std::string::npos) << s;
  }
}

TEST(Cli, TrainingRunReportsTheStepAndTheReference) {
  // The Llama 3 70B example with a reference added through --set: the printed text and
  // summary.json carry the training figures, per-rank rows and the signed error.
  const fs::path out = scratch("training");
  const Result r = dtsim("run " + example("llama3-70b-64xH100.json") + " --out " + out.string() +
                         " --set 'reference={\"source\": \"test\", \"metric\": "
                         "\"iteration_time_s\", \"value\": 10}'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"iteration", "MFU", "reference       iteration_time_s = 10", "error"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  }
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  const auto& t = summary.at("training");
  for (const char* key : {"iteration_time_s", "samples_per_s", "tokens_per_s", "model_flops_per_iteration",
                          "achieved_tflops_per_device", "mfu", "time_to_train_s"}) {
    EXPECT_TRUE(t.contains(key)) << key;
  }
  ASSERT_EQ(t.at("ranks").size(), 64u);
  for (const char* key : {"compute_s", "exposed_comm_s", "bubble_s", "idle_s", "peak_memory_bytes",
                          "memory_capacity_bytes", "oom", "params", "model_state_bytes",
                          "activation_bytes_peak", "comm_buffer_bytes", "workspace_bytes"}) {
    EXPECT_TRUE(t.at("ranks")[0].contains(key)) << key;
  }
  const double predicted = t.at("iteration_time_s").get<double>();
  EXPECT_NEAR(summary.at("reference").at("error").get<double>(), (predicted - 10) / 10, 1e-12);
  EXPECT_TRUE(summary.contains("collective_calls"));
}

TEST(Cli, ReproduceWritesTheValidationReport) {
  const fs::path out = scratch("reproduce");
  const fs::path cases = out / "cases";
  fs::create_directories(cases);
  const fs::path scenario = cases / "case.json";
  std::ofstream(scenario) << R"({
    "cluster": { "nodes": [ { "count": 1, "device": "H100", "devices_per_node": 4, "nics": 0 } ] },
    "model": { "family": "gpt", "layers": 2, "hidden": 256, "heads": 4, "vocab": 1000, "seq_len": 64 },
    "training": { "global_batch": 8, "micro_batch": 2 },
    "reference": { "source": "test", "metric": "iteration_time_s", "value": 1 },
    "simulation": { "trace": false } })";
  const Result r = dtsim("reproduce " + cases.string() + " --md " + (out / "v.md").string() +
                         " --json " + (out / "v.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(slurp(out / "v.json"));
  ASSERT_EQ(j.at("cases").size(), 1u);
  EXPECT_EQ(j["cases"][0]["case"], "case");
  EXPECT_LT(j["cases"][0]["error"].get<double>(), 0);  // a tiny model is far under 1 s
  EXPECT_NE(slurp(out / "v.md").find("| case | iteration_time_s | 1 |"), std::string::npos);
  // A case without a reference is skipped and listed; the others still make the report.
  std::ofstream(cases / "zz.json") << R"({"cluster": {"nodes": [{"count": 1, "device": "H100",
    "devices_per_node": 4, "nics": 0}]}, "model": {"preset": "gpt2"}})";
  const std::string first = slurp(out / "v.json");
  const Result skipped =
      dtsim("reproduce " + cases.string() + " --json " + (out / "v.json").string());
  EXPECT_EQ(skipped.exit_code, 0) << skipped.output;
  EXPECT_NE(
      skipped.output.find("skipped " + (cases / "zz.json").string() + ": no \"reference\" block"),
      std::string::npos)
      << skipped.output;
  EXPECT_EQ(slurp(out / "v.json"), first);
  // A case that fails is named, and no report is written without it.
  std::ofstream(cases / "aa.json") << R"({"cluster": {"nodes": [{"count": 1, "device": "H100",
    "devices_per_node": 4, "nics": 0}]}, "model": {"preset": "gpt2"}, "training": {"global_batch": 3,
    "micro_batch": 2}, "reference": {"source": "test", "metric": "iteration_time_s", "value": 1}})";
  fs::remove(out / "v.json");
  const Result bad = dtsim("reproduce " + cases.string() + " --json " + (out / "v.json").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("aa.json: /training/global_batch"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("no report was written"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(out / "v.json"));
}

TEST(Cli, ReproduceWritesTheSameReportForAnyJobCount) {
  const fs::path out = scratch("reproduce_jobs");
  const std::string cases = std::string(DTSIM_SOURCE_DIR) + "/scenarios/validation/";
  const std::string some = cases + "goyal2017-resnet50-256xP100.json " + cases +
                           "akiba2017-resnet50-1024xP100.json " + cases +
                           "dgxc-llama3.1-70b-64xH100-bf16.json";
  fs::create_directories(out);
  ASSERT_EQ(dtsim("reproduce " + some + " --jobs 1 --md " + (out / "1.md").string()).exit_code, 0);
  const Result r = dtsim("reproduce " + some + " --jobs 3 --md " + (out / "3.md").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[3/3] "), std::string::npos) << r.output;
  // The command line in the report names the output file; the rows must match exactly.
  std::string one = slurp(out / "1.md"), three = slurp(out / "3.md");
  const size_t a = one.find("| case"), b = three.find("| case");
  ASSERT_NE(a, std::string::npos);
  EXPECT_EQ(one.substr(a), three.substr(b));
}

TEST(Cli, SweepRunsTheCartesianProduct) {
  const fs::path csv = scratch("sweep.csv");
  const Result r = dtsim("sweep " + example("allreduce-8xH100-nvswitch.json") +
                         " --set 'workload.sizes=[\"64MiB\"]' --set 'workload.algorithms=[\"ring\"]'" +
                         " --vary cluster.nodes.0.devices_per_node=2,4,8" +
                         " --vary simulation.network_model=flow,analytical --jobs 2 --out " + csv.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(slurp(csv));
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(
      header.rfind("point,cluster.nodes.0.devices_per_node,simulation.network_model,error,", 0), 0u)
      << header;
  // The calls' columns are named by their labels (which live as long as the point's run).
  EXPECT_NE(header.find(",all_reduce/ring/67108864B#0.time_s,"), std::string::npos) << header;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  EXPECT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].rfind("0,2,flow,,", 0), 0u) << lines[0];
  EXPECT_EQ(lines[5].rfind("5,8,analytical,,", 0), 0u) << lines[5];
}

}  // namespace

namespace {

// A cost database is read as strictly as a scenario: a key written twice is an error at its
// pointer (the last value silently won), and a file without a size stops at the input
// limit (`--costs /dev/zero` read until memory ran out).
TEST(Cli, ACostDatabaseIsReadStrictly) {
  const fs::path dir = scratch("costs_strict");
  fs::create_directories(dir);
  std::ofstream(dir / "twice.json") << "{\"version\": 2, \"version\": 3}";
  const std::string run = "check " + example("allreduce-8xH100-nvswitch.json") + " --costs ";
  const Result twice = dtsim(run + (dir / "twice.json").string());
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("twice.json: /version: the key \"version\" is written twice"),
            std::string::npos)
      << twice.output;
  const Result endless = dtsim("--max-input-size 1MiB " + run + "/dev/zero");
  EXPECT_EQ(endless.exit_code, 2) << endless.output;
  EXPECT_NE(endless.output.find("/dev/zero: cannot read the cost database"), std::string::npos)
      << endless.output;
  const Result costs = dtsim("costs show " + (dir / "twice.json").string());
  EXPECT_EQ(costs.exit_code, 2) << costs.output;
  EXPECT_NE(costs.output.find("written twice"), std::string::npos) << costs.output;
}

TEST(Cli, AMeasuredModelNeedsItsDatabase) {
  const Result r = dtsim("run " + example("allreduce-8xH100-nvswitch.json") +
                         " --costs costs.json --out " + scratch("costs").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("costs.json: cannot read the cost database"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(scratch("costs") / "summary.json"));
  // The scenario key: a measured model names its database, relative to the scenario file.
  const Result key = dtsim("check " + example("allreduce-8xH100-nvswitch.json") +
                           " --set simulation.cost_model=measured --set simulation.costs=db.json");
  EXPECT_EQ(key.exit_code, 2) << key.output;
  EXPECT_NE(key.output.find(example("db.json") + ": cannot read the cost database"),
            std::string::npos)
      << key.output;
  const Result missing = dtsim("check " + example("allreduce-8xH100-nvswitch.json") +
                               " --set simulation.cost_model=measured");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("\"measured\" needs \"costs\""), std::string::npos)
      << missing.output;
}

TEST(Cli, SummaryCountsOpsByCostSource) {
  const fs::path out = scratch("cost_sources");
  const Result r =
      dtsim("run " + example("llama3-70b-64xH100.json") + " --no-timing --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("compute costs   roofline"), std::string::npos) << r.output;
  const auto s = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(s["cost_model"], "roofline");
  const auto& c = s["cost_sources"];
  EXPECT_GT(c["roofline"]["ops"].get<int64_t>(), 0);
  EXPECT_EQ(c["measured"]["ops"].get<int64_t>(), 0);
  EXPECT_EQ(c["kernel_launch"]["ops"], c["roofline"]["ops"]);
  EXPECT_NEAR(c["roofline"]["share"].get<double>() + c["kernel_launch"]["share"].get<double>(), 1,
              1e-12);
}

// Ctrl-C during a long run stops it and writes nothing: the process is interrupted while
// it simulates (the 1,024-GPU step runs for seconds), exits 130, and leaves no outputs.
TEST(Cli, InterruptStopsTheRunAndWritesNothing) {
  const fs::path out = scratch("interrupt");
  // A shell starts background jobs with SIGINT ignored, which dtsim keeps (as a job under
  // nohup would want); the run is started with SIGINT at its default, as from a terminal.
  const std::string cmd =
      "python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
      "os.execv(sys.argv[1], sys.argv[1:])' " +
      std::string(DTSIM_BINARY) + " run " + example("gpt3-175b-1024xA100.json") + " --out " +
      out.string() + " > " + (fs::temp_directory_path() / "dtsim_int.log").string() +
      " 2>&1 & pid=$!; sleep 1; kill -INT $pid; wait $pid; echo $?";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[64] = {};
  const size_t n = fread(buf, 1, sizeof buf - 1, p);
  pclose(p);
  const int code = std::stoi(std::string(buf, n));
  const std::string log = slurp(fs::temp_directory_path() / "dtsim_int.log");
  EXPECT_EQ(code, 130) << log;
  EXPECT_NE(log.find("nothing was written"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(out / "summary.json"));
  EXPECT_FALSE(fs::exists(out / "trace.json"));
}

}  // namespace

namespace {

// The mean iteration: with local SGD both steps weighed, else the simulated step.
double simulated_time(const fs::path& summary) {
  const auto s = nlohmann::json::parse(slurp(summary));
  if (s.contains("local_sgd")) return s["local_sgd"]["mean_iteration_s"].get<double>();
  return s["simulated_time_s"].get<double>();
}

// `dtsim lower` writes the step as a task_graph scenario; running that gives the training
// scenario's step time (within 0.1%; the graph is the same, so it is exact), both with the
// durations in the file and with its ops priced again from their signatures.
void expect_lowered_graph_reproduces(const std::string& name, const std::string& sets) {
  // Scaled and full runs of one example may run at once (ctest -j): folders of their own.
  const bool layer = sets.find("granularity=layer") != std::string::npos;
  const fs::path dir =
      scratch("lower_" + name + (sets.empty() ? "_full" : "_scaled") + (layer ? "_layer" : ""));
  const std::string set = sets + " --set simulation.trace=false";
  const Result direct = dtsim("run " + example(name + ".json") + set +
                              " --no-timing --quiet --out " + (dir / "direct").string());
  ASSERT_EQ(direct.exit_code, 0) << direct.output;
  const Result lowered =
      dtsim("lower " + example(name + ".json") + sets + " --out " + (dir / "graph.json").string());
  ASSERT_EQ(lowered.exit_code, 0) << lowered.output;
  ASSERT_TRUE(fs::exists(dir / "graph.tasks.jsonl"));
  const double expected = simulated_time(dir / "direct" / "summary.json");
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "direct" / "summary.json"))["training"]["granularity"],
            layer ? "layer" : "chunk");
  for (const std::string reprice : {"false", "true"}) {
    const fs::path out = dir / ("rerun_" + reprice);
    const Result rerun =
        dtsim("run " + (dir / "graph.json").string() + " --set workload.reprice=" + reprice +
              " --no-timing --quiet --out " + out.string());
    ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
    EXPECT_NEAR(simulated_time(out / "summary.json") / expected, 1, 1e-3)
        << name << " reprice " << reprice;
    const auto s = nlohmann::json::parse(slurp(out / "summary.json"));
    // Repriced, every kernel's time is the roofline's again; kept, the file's durations.
    EXPECT_EQ(s["cost_sources"]["roofline"]["ops"].get<int64_t>() > 0, reprice == "true") << name;
  }
}

TEST(CliLower, ScaledDownExamplesReproduceTheirStepTime) {
  expect_lowered_graph_reproduces("gpt3-175b-1024xA100",
                                  " --set cluster.nodes.0.count=16 --set training.global_batch=32");
  expect_lowered_graph_reproduces(
      "llama3-70b-64xH100",
      " --set model.layers=8 --set training.seq_len=2048 --set training.global_batch=8");
  expect_lowered_graph_reproduces("resnet50-256xP100",
                                  " --set cluster.nodes.0.count=2 --set training.global_batch=512");
  expect_lowered_graph_reproduces("classifier-100m-classes-256xV100",
                                  " --set cluster.nodes.0.count=2 --set training.global_batch=512");
  expect_lowered_graph_reproduces("hetero-a100-v100-gpt", " --set training.global_batch=32");
  // Local SGD: two graphs, the synchronizing step and the local one, weighed alike.
  expect_lowered_graph_reproduces("geo-2regions-llama3-8b",
                                  " --set model.layers=4 --set training.seq_len=2048");
  // At layer granularity (what a real executor runs): many more tasks, the same round trip.
  expect_lowered_graph_reproduces("llama3-70b-64xH100",
                                  " --set model.layers=8 --set training.seq_len=2048 --set "
                                  "training.global_batch=8 --set simulation.granularity=layer");
}

// The full examples (label bench: minutes, not for every CI run).
TEST(CliLower, FullExamplesReproduceTheirStepTime) {
  if (std::getenv("DTSIM_FULL_EXAMPLES") == nullptr) GTEST_SKIP() << "set DTSIM_FULL_EXAMPLES=1";
  for (const char* name : {"gpt3-175b-1024xA100", "llama3-70b-64xH100", "resnet50-256xP100",
                           "classifier-100m-classes-256xV100", "hetero-a100-v100-gpt"}) {
    expect_lowered_graph_reproduces(name, "");
  }
}

// Local SGD's lowered scenario carries both steps with the period that weighs them.
TEST(CliLower, LocalSgdWritesBothStepsAndTheirPeriod) {
  const fs::path dir = scratch("lower_geo");
  const Result r =
      dtsim("lower " + example("geo-2regions-llama3-8b.json") +
            " --set model.layers=2 --set training.seq_len=1024 --out " + (dir / "g.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("with its local SGD step"), std::string::npos) << r.output;
  const auto doc = nlohmann::json::parse(slurp(dir / "g.json"));
  EXPECT_EQ(doc["workload"]["graph_file"], "g.tasks.jsonl");
  EXPECT_EQ(doc["workload"]["local_graph_file"], "g.local.tasks.jsonl");
  EXPECT_EQ(doc["workload"]["sync_every"], 8);
  // The local step reduces inside each region only: its file is another graph.
  EXPECT_NE(slurp(dir / "g.tasks.jsonl"), slurp(dir / "g.local.tasks.jsonl"));
  const Result run =
      dtsim("run " + (dir / "g.json").string() +
            " --set simulation.trace=false --no-timing --quiet --out " + (dir / "run").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto s = nlohmann::json::parse(slurp(dir / "run" / "summary.json"));
  const auto& mix = s["local_sgd"];
  EXPECT_EQ(mix["sync_every"], 8);
  EXPECT_LT(mix["local_step_s"].get<double>(), mix["sync_step_s"].get<double>());
  EXPECT_NEAR(mix["mean_iteration_s"].get<double>(),
              (7 * mix["local_step_s"].get<double>() + mix["sync_step_s"].get<double>()) / 8,
              1e-12);
}

// A damaged lowered-graph file is bad input naming the file, the line and the field.
TEST(CliLower, ADamagedGraphFileNamesItsLineAndField) {
  const fs::path dir = scratch("lower_damaged");
  ASSERT_EQ(dtsim("lower " + example("hetero-a100-v100-gpt.json") + " --quiet --out " +
                  (dir / "g.json").string())
                .exit_code,
            0);
  std::string text = slurp(dir / "g.tasks.jsonl");
  // The first collective call's line (keys are written in alphabetical order).
  const size_t line = text.rfind('\n', text.find("\"collective\":0,")) + 1;
  const size_t at = text.find("\"bytes\":", line);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 8, "\"bites\":");
  std::ofstream(dir / "g.tasks.jsonl") << text;
  const Result r = dtsim("check " + (dir / "g.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("/workload/graph_file: " + (dir / "g.tasks.jsonl").string() + ": line "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"bytes\": missing"), std::string::npos) << r.output;
}

}  // namespace
