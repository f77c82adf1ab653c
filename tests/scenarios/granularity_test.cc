// simulation.granularity: at "layer" the same kernels and the same collective traffic as at
// "chunk", with the compute tasks cut where the real step's tensor-, context- and
// expert-parallel collectives run.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "runner/scenario_runner.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

using test_support::prepare;

nlohmann::json scenario(const std::string& model, const nlohmann::json& training,
                        const nlohmann::json& parallelism) {
  nlohmann::json s = nlohmann::json::parse(R"({
    "cluster": {"nodes": [{"count": 2, "device": "H100", "devices_per_node": 8,
                           "nic_bandwidth": "400Gbps"}], "fabric": {"kind": "single_switch"}},
    "simulation": {"trace": false}})");
  s["model"] = {{"preset", model}, {"layers", 4}};
  s["training"] = training;
  s["parallelism"] = parallelism;
  return s;
}

// What one rank runs: its kernels in order, and its collective bytes by op.
struct RankWork {
  std::vector<OpSignature> kernels;
  std::map<CollectiveOp, double> bytes;
  int collectives = 0;
  int compute_tasks = 0;
};

std::vector<RankWork> work_of(const LoweredScenario& l, int ranks) {
  std::vector<RankWork> out(static_cast<size_t>(ranks));
  for (const TaskView t : l.graph.tasks()) {
    RankWork& w = out[static_cast<size_t>(t.rank)];
    if (t.kind == TaskKind::kCompute) {
      ++w.compute_tasks;
      for (const OpSignature& op : l.graph.op_list(t.ops)) w.kernels.push_back(op);
    } else if (t.kind == TaskKind::kCollective) {
      const CollectiveCall& call = l.graph.collectives()[t.collective];
      w.bytes[call.op] += static_cast<double>(call.bytes.count());
      ++w.collectives;
    }
  }
  return out;
}

struct Case {
  std::string name;
  nlohmann::json document;
};

std::vector<Case> cases() {
  const auto training = [](const char* recompute) {
    return nlohmann::json{
        {"global_batch", 8}, {"micro_batch", 1}, {"seq_len", 1024}, {"recompute", recompute}};
  };
  return {
      {"gpt full recompute, tp 2 x pp 2",
       scenario("gpt3-1.3b", training("full"), {{"tp", 2}, {"pp", 2}})},
      {"gpt sequence parallel, overlapped TP, bucketed",
       scenario("gpt3-1.3b", training("selective"),
                {{"tp", 4}, {"sequence_parallel", true}, {"tp_comm_overlap", true}})},
      {"llama context parallel", scenario("llama3-8b", training("none"), {{"tp", 2}, {"cp", 2}})},
      {"mixtral expert parallel", scenario("mixtral-8x7b", training("none"),
                                           {{"tp", 2}, {"ep", 4}, {"sequence_parallel", true}})},
      {"bert zero-3", scenario("bert-large", training("none"), {{"tp", 2}, {"zero_stage", 3}})},
  };
}

std::unique_ptr<test_support::Prepared> lowered(const Case& c, const char* granularity) {
  return prepare(c.document, "t.json", {std::string("simulation.granularity=") + granularity});
}

TEST(Granularity, LayerRunsTheSameKernelsAndTrafficInMoreTasks) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto chunk = lowered(c, "chunk");
    const auto layer = lowered(c, "layer");
    const int ranks = static_cast<int>(chunk->scenario.cluster.devices.size());
    EXPECT_TRUE(layer->lowered.graph.validate(ranks).empty());
    const std::vector<RankWork> a = work_of(chunk->lowered, ranks);
    const std::vector<RankWork> b = work_of(layer->lowered, ranks);
    for (int r = 0; r < ranks; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      EXPECT_EQ(a[r].kernels, b[r].kernels);
      EXPECT_EQ(a[r].bytes.size(), b[r].bytes.size());
      for (const auto& [op, bytes] : a[r].bytes) {
        // Each call rounds its bytes to a whole byte.
        EXPECT_NEAR(b[r].bytes.at(op), bytes, b[r].collectives) << collective_op_name(op);
      }
      EXPECT_GT(b[r].compute_tasks, a[r].compute_tasks);
      EXPECT_GT(b[r].collectives, a[r].collectives);
    }
    // The step does the same work, its collectives in more, smaller calls.
    const ScenarioRun x = run_scenario(chunk->scenario, chunk->lowered);
    const ScenarioRun y = run_scenario(layer->scenario, layer->lowered);
    ASSERT_TRUE(x.result.stalled.empty() && y.result.stalled.empty());
    EXPECT_NEAR(y.result.end.seconds() / x.result.end.seconds(), 1, 0.15);
  }
}

// Names of the kernels of the compute task before and after each of rank 0's collectives
// of `kind` ("tp fwd", "ep all-to-all fwd", "cp kv gather").
std::vector<std::pair<std::string, std::string>> around(const LoweredScenario& l,
                                                        const std::string& kind) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string before;
  bool waiting = false;
  for (const TaskView t : l.graph.tasks()) {
    if (t.rank != 0) continue;
    if (t.kind == TaskKind::kCompute) {
      const auto ops = l.graph.op_list(t.ops);
      if (waiting) out.back().second = ops.front().name;
      waiting = false;
      before = ops.back().name;
    } else if (t.kind == TaskKind::kCollective && std::string(t.name).rfind(kind, 0) == 0) {
      if (!waiting) out.emplace_back(before, "");
      waiting = true;
    }
  }
  return out;
}

TEST(Granularity, CollectivesSitWhereMegatronRunsThem) {
  const std::vector<Case> all = cases();
  const auto gpt = lowered(all[0], "layer");
  // Rank 0 holds the embedding and blocks 0-1 (of 4, pp 2). Forward: after the vocabulary-
  // parallel lookup, after the attention projection and after fc2.
  const auto fwd = around(gpt->lowered, "tp fwd");
  ASSERT_GE(fwd.size(), 3u);
  EXPECT_EQ(fwd[0], (std::pair<std::string, std::string>{"embed.tokens", "embed.positions"}));
  EXPECT_EQ(fwd[1], (std::pair<std::string, std::string>{"attn.proj", "attn.dropout_add"}));
  EXPECT_EQ(fwd[2], (std::pair<std::string, std::string>{"mlp.fc2", "mlp.dropout_add"}));
  // Backward under full recomputation: the recomputed forward's reduces, then after the
  // gradients of fc1 (before the MLP norm's) and of QKV (before the attention norm's).
  const auto bwd = around(gpt->lowered, "tp bwd");
  ASSERT_GE(bwd.size(), 4u);
  EXPECT_EQ(bwd[0], (std::pair<std::string, std::string>{"attn.proj", "attn.dropout_add"}));
  EXPECT_EQ(bwd[1], (std::pair<std::string, std::string>{"mlp.fc2", "mlp.dropout_add"}));
  EXPECT_EQ(bwd[2], (std::pair<std::string, std::string>{"mlp.fc1", "mlp.norm"}));
  EXPECT_EQ(bwd[3], (std::pair<std::string, std::string>{"attn.qkv", "attn.norm"}));

  const auto llama = lowered(all[2], "layer");
  const auto cp = around(llama->lowered, "cp kv gather");
  ASSERT_FALSE(cp.empty());
  EXPECT_EQ(cp[0], (std::pair<std::string, std::string>{"attn.rope", "attn.score"}));

  const auto mixtral = lowered(all[3], "layer");
  const auto ep = around(mixtral->lowered, "ep all-to-all fwd");
  ASSERT_GE(ep.size(), 2u);
  EXPECT_EQ(ep[0], (std::pair<std::string, std::string>{"moe.permute", "moe.expert.fc1"}));
  EXPECT_EQ(ep[1], (std::pair<std::string, std::string>{"moe.expert.fc2", "moe.unpermute"}));
}

TEST(Granularity, UnknownValueIsAnError) {
  try {
    lowered(cases()[0], "op");
    FAIL() << "expected an error";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("/simulation/granularity"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtsim
