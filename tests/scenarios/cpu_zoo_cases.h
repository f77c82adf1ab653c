// Every model family of the zoo as a tiny fp32 step on two CPU ranks: GPT, Llama with
// grouped-query attention and BERT, each with and without FlashAttention (selective or full
// recomputation), Mixtral, ResNet-50 and the MLP.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtsim::test_support {

inline nlohmann::json cpu_scenario(nlohmann::json model, nlohmann::json training) {
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

inline std::vector<nlohmann::json> cpu_zoo_cases() {
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
  return cases;
}

}  // namespace dtsim::test_support
