// What recomputation reruns: a mode (none, selective, full); under selective, the modules
// whose activations are dropped and rebuilt in the backward pass, by Megatron-LM's names
// (--recompute-modules, megatron/core/transformer/transformer_config.py); under full, which
// blocks of a pipeline chunk are checkpointed (--recompute-method, --recompute-num-layers);
// and which blocks' kept activations wait in host memory instead (activation offload).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "models/precision.h"

namespace dtsim::models {

enum class RecomputeModule : uint8_t {
  kCoreAttn,       // QK^T, softmax, dropout, attention over V (Korthikanti et al. 2022)
  kLayernorm,      // the norms before attention and the MLP: their outputs are not kept
  kMlp,            // a dense layer's whole MLP, from its input
  kMoeAct,         // the experts' activation function: its output (fc2's input) not kept
  kMoe,            // a whole MoE layer from its input, all-to-alls included
  kSharedExperts,  // the shared experts, from their input
};
inline constexpr RecomputeModule kAllRecomputeModules[] = {
    RecomputeModule::kCoreAttn, RecomputeModule::kLayernorm, RecomputeModule::kMlp,
    RecomputeModule::kMoeAct,   RecomputeModule::kMoe,       RecomputeModule::kSharedExperts};
std::string_view recompute_module_name(RecomputeModule m);  // "core_attn", "moe_act", ...
std::optional<RecomputeModule> recompute_module_from_name(std::string_view name);

// Full recomputation of a chunk's blocks (megatron/core/transformer/transformer_block.py,
// _checkpointed_forward): uniform checkpoints them in groups of num_layers, keeping each
// group's input and rerunning the whole group before its backward; block checkpoints the
// first num_layers blocks one by one and keeps every activation of the rest.
enum class RecomputeMethod : uint8_t { kUniform, kBlock };
inline constexpr RecomputeMethod kAllRecomputeMethods[] = {RecomputeMethod::kUniform,
                                                           RecomputeMethod::kBlock};
std::string_view recompute_method_name(RecomputeMethod m);

// A set of modules as bits.
using RecomputeModules = uint8_t;
constexpr RecomputeModules module_bit(RecomputeModule m) {
  return static_cast<RecomputeModules>(1u << static_cast<unsigned>(m));
}

struct RecomputePolicy {
  Recompute mode = Recompute::kNone;
  // Under selective: Megatron-LM's default, the attention core.
  RecomputeModules modules = module_bit(RecomputeModule::kCoreAttn);
  // Under full: uniform groups of one block each by default (every block checkpointed).
  RecomputeMethod method = RecomputeMethod::kUniform;
  int num_layers = 1;
  // Activation offload (Megatron-Core's cpu_offloading_num_layers with
  // cpu_offloading_activations): what the first `offload_layers` blocks of each chunk keep
  // goes to host memory after the forward pass and comes back before the backward pass.
  int offload_layers = 0;
  RecomputePolicy() = default;
  // A mode with the default modules (implicit: a mode alone is a policy).
  RecomputePolicy(Recompute m) : mode(m) {}  // NOLINT(google-explicit-constructor)
  RecomputePolicy(Recompute m, RecomputeModules mods) : mode(m), modules(mods) {}
  bool selects(RecomputeModules op_modules) const {
    return mode == Recompute::kSelective && (modules & op_modules) != 0;
  }
};

}  // namespace dtsim::models
