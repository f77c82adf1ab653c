// Every kernel that lowering emits for an fp32 step on CPUs has a CPU kernel: each model
// family of the zoo, with and without FlashAttention and recomputation, lowered on two
// CPU ranks, and every distinct signature of its step runnable by kernels/ (run once).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "calibration/calibrate.h"
#include "kernels/kernel.h"
#include "tests/prepared_scenario.h"

namespace dtsim {
namespace {

nlohmann::json cpu_scenario(nlohmann::json model, nlohmann::json training) {
  nlohmann::json s = {
      {"cluster",
       {{"nodes",
         {{{"count", 1}, {"device", "CPU"}, {"devices_per_node", 2}, {"nic_bandwidth", "10Gbps"}}}},
        {"fabric", {{"kind", "single_switch"}}}}},
      {"simulation", {{"trace", false}}},
      {"model", std::move(model)},
      {"training", std::move(training)},
      {"parallelism", nlohmann::json::object()}};
  s["training"]["precision"] = "fp32";
  return s;
}

TEST(CpuKernelCoverage, EveryKernelOfAnFp32CpuStepRuns) {
  const nlohmann::json tiny_lm = {{"layers", 1}, {"hidden", 64}, {"heads", 4}, {"vocab", 512}};
  const nlohmann::json lm_training = {{"global_batch", 2}, {"micro_batch", 1}, {"seq_len", 32}};
  std::vector<nlohmann::json> cases;
  for (const char* preset : {"gpt2", "llama3-8b", "bert-base"}) {
    for (bool flash : {false, true}) {
      nlohmann::json model = tiny_lm;
      model["preset"] = preset;
      if (std::string(preset) == "llama3-8b") {
        model["kv_heads"] = 2;  // grouped-query attention
        model["ffn_hidden"] = 128;
      }
      nlohmann::json training = lm_training;
      training["flash_attention"] = flash;
      training["recompute"] = flash ? "full" : "selective";
      cases.push_back(cpu_scenario(model, training));
    }
  }
  cases.push_back(cpu_scenario({{"preset", "mixtral-8x7b"},
                                {"layers", 1},
                                {"hidden", 64},
                                {"heads", 4},
                                {"kv_heads", 2},
                                {"ffn_hidden", 64},
                                {"vocab", 512}},
                               lm_training));
  cases.push_back(cpu_scenario({{"preset", "resnet50"}, {"image_size", 32}, {"classes", 10}},
                               {{"global_batch", 2}, {"micro_batch", 1}}));
  cases.push_back(
      cpu_scenario({{"preset", "mlp-mnist"}}, {{"global_batch", 2}, {"micro_batch", 1}}));
  std::set<std::string> kinds;
  for (const nlohmann::json& doc : cases) {
    SCOPED_TRACE(doc["model"].dump() + " " + doc["training"].dump());
    const auto p = test_support::prepare(doc);
    for (const OpSignature& op : calibration::distinct_kernels(p->lowered.graph)) {
      ASSERT_EQ(kernels::cpu_unsupported_reason(op), "") << op.name;
      kernels::OperandBuffers buffers(op);
      kernels::run_cpu(op, buffers);
      kinds.insert(std::string(kernel_kind_name(op.kind)));
    }
  }
  // The kinds these steps use; a kind lowering adds must join kernels/ (or this list).
  for (const char* kind :
       {"gemm", "batched_gemm", "flash_attention", "conv", "layer_norm", "rms_norm", "batch_norm",
        "softmax", "gelu", "swiglu", "relu", "dropout", "elementwise", "embedding", "cross_entropy",
        "router", "pool", "optimizer_update", "grouped_gemm", "permute"}) {
    EXPECT_TRUE(kinds.contains(kind)) << kind;
  }
}

}  // namespace
}  // namespace dtsim
