// Every kernel that lowering emits for an fp32 step on CPUs has a CPU kernel: each model
// family of the zoo, with and without FlashAttention and recomputation, lowered on two
// CPU ranks, and every distinct signature of its step runnable by kernels/ (run once).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "calibration/calibrate.h"
#include "kernels/kernel.h"
#include "tests/prepared_scenario.h"
#include "tests/scenarios/cpu_zoo_cases.h"

namespace dtsim {
namespace {

TEST(CpuKernelCoverage, EveryKernelOfAnFp32CpuStepRuns) {
  std::set<std::string> kinds;
  for (const nlohmann::json& doc : test_support::cpu_zoo_cases()) {
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
