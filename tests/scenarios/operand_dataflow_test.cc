// The tensors a lowered step's ops bind form the model's data flow: on each rank, every
// activation an op reads was written earlier by an op of the same micro-batch (or is the
// model's input), every weight the backward reads is one the forward read, every bound
// operand is an operand of its kernel, and only scratch is left unbound.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "kernels/kernel.h"
#include "tests/prepared_scenario.h"
#include "tests/scenarios/cpu_zoo_cases.h"

namespace dtsim {
namespace {

// Operands a kernel may keep as its own: token ids and labels, im2col's columns, the
// router's logits gradient, and a pointwise op's bias where it has none (its only input
// read twice, or no bias parameters).
bool scratch(const std::string& operand) {
  static const std::set<std::string> kScratch = {"ids",  "labels", "col", "dlogits",
                                                 "bias", "dbias",  "db"};
  return kScratch.contains(operand);
}

// What one rank's walk found.
struct RankFlow {
  int bound_ops = 0;
  int optimizer_ops = 0;
  int boundary_reads = 0;  // activations another rank makes (pipeline neighbours)
};

// Walks `rank`'s compute tasks in graph order (its compute stream's order) and checks each
// bound operand against its kernel and the data flow before it.
RankFlow check_rank(const TaskGraph& g, int rank) {
  RankFlow flow;
  // Tensors the rank writes at all: a read of any other is a pipeline boundary's.
  std::set<TensorRef> made_here;
  for (const TaskView t : g.tasks()) {
    if (t.rank != rank || t.kind != TaskKind::kCompute || t.ops == kNoOps) continue;
    const auto ops = g.op_list(t.ops);
    const auto bound = g.op_operands(t.ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == KernelKind::kCast || ops[i].kind == KernelKind::kCopy) continue;
      for (const kernels::OperandSpec& s : kernels::cpu_operands(ops[i])) {
        for (const OperandBinding& b : bound[i]) {
          if (b.operand == s.name && s.written) made_here.insert(b.tensor);
        }
      }
    }
  }
  std::set<std::pair<uint32_t, TensorRef>> written;  // (micro-batch, activation)
  std::set<TensorRef> forward_weights, backward_weights;
  for (const TaskView t : g.tasks()) {
    if (t.rank != rank || t.kind != TaskKind::kCompute || t.ops == kNoOps) continue;
    const auto ops = g.op_list(t.ops);
    const auto bound = g.op_operands(t.ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      const OpSignature& op = ops[i];
      SCOPED_TRACE("rank " + std::to_string(rank) + ", " + std::string(t.name) + ", " + op.name +
                   " (" + std::string(op_pass_name(op.pass)) + ")");
      if (op.kind == KernelKind::kCast || op.kind == KernelKind::kCopy) continue;
      ++flow.bound_ops;
      const auto specs = kernels::cpu_operands(op);
      std::map<std::string, const OperandBinding*> by_operand;
      for (const OperandBinding& b : bound[i]) {
        EXPECT_TRUE(by_operand.emplace(b.operand, &b).second) << "bound twice: " << b.operand;
      }
      for (const kernels::OperandSpec& s : specs) {
        const auto it = by_operand.find(s.name);
        if (it == by_operand.end()) {
          EXPECT_TRUE(scratch(s.name)) << "unbound operand " << s.name;
          continue;
        }
        const TensorRef& tensor = it->second->tensor;
        by_operand.erase(it);
        if (tensor.role == TensorRole::kParams) ++flow.optimizer_ops;
        if (tensor.role == TensorRole::kWeight) {
          (op.pass == OpPass::kForward ? forward_weights : backward_weights).insert(tensor);
        }
        if (!per_micro_batch(tensor.role)) continue;
        EXPECT_NE(t.tag, kNoMicroBatch);
        // Reads first: a kernel that writes a tensor does not read it.
        if (s.written || tensor.layer == kModelInput) continue;
        if (!made_here.contains(tensor)) {
          // Received from a pipeline neighbour: a layer's result forward, its gradient back.
          EXPECT_TRUE(tensor.role == TensorRole::kOutput || tensor.role == TensorRole::kOutputGrad)
              << s.name << " reads " << tensor_role_name(tensor.role) << " no op of the rank makes";
          ++flow.boundary_reads;
          continue;
        }
        EXPECT_TRUE(written.contains({t.tag, tensor}))
            << s.name << " reads " << tensor_role_name(tensor.role) << " of op " << tensor.op
            << " of layer " << tensor.layer << " of micro-batch " << t.tag
            << " before any op wrote it";
      }
      EXPECT_TRUE(by_operand.empty()) << "binds an operand its kernel lacks: "
                                      << (by_operand.empty() ? "" : by_operand.begin()->first);
      for (const OperandBinding& b : bound[i]) {
        const auto s = std::find_if(specs.begin(), specs.end(),
                                    [&](const auto& x) { return x.name == b.operand; });
        if (s != specs.end() && s->written && per_micro_batch(b.tensor.role)) {
          written.insert({t.tag, b.tensor});
        }
      }
    }
  }
  EXPECT_FALSE(forward_weights.empty());
  for (const TensorRef& w : backward_weights) {
    EXPECT_TRUE(forward_weights.contains(w))
        << "a backward kernel reads a weight the forward did not: op " << w.op << " of layer "
        << w.layer;
  }
  return flow;
}

TEST(OperandDataflow, EveryTensorAnOpReadsWasWrittenBeforeInItsMicroBatch) {
  for (const nlohmann::json& doc : test_support::cpu_zoo_cases()) {
    SCOPED_TRACE(doc["model"].dump() + " " + doc["training"].dump());
    const auto p = test_support::prepare(doc);
    for (int rank = 0; rank < 2; ++rank) {
      const RankFlow flow = check_rank(p->lowered.graph, rank);
      EXPECT_GT(flow.bound_ops, 0);
      EXPECT_EQ(flow.optimizer_ops, 1);   // one update over the rank's whole state
      EXPECT_EQ(flow.boundary_reads, 0);  // data parallel: every rank runs the whole model
    }
  }
}

// Pipeline stages read only their neighbours' results and gradients from outside;
// tensor parallelism, interleaving and layer granularity keep the flow whole.
TEST(OperandDataflow, PipelineAndTensorParallelRanksKeepTheFlow) {
  const nlohmann::json model = {
      {"preset", "gpt2"}, {"layers", 4}, {"hidden", 64}, {"heads", 4}, {"vocab", 512}};
  const nlohmann::json training = {{"global_batch", 4}, {"micro_batch", 1}, {"seq_len", 32}};
  for (const nlohmann::json& plan :
       {nlohmann::json{{"pp", 2}},
        nlohmann::json{{"pp", 2}, {"schedule", "interleaved_1f1b"}, {"virtual_stages", 2}},
        nlohmann::json{{"tp", 2}}}) {
    for (const char* granularity : {"chunk", "layer"}) {
      nlohmann::json doc = test_support::cpu_scenario(model, training);
      doc["parallelism"] = plan;
      doc["simulation"]["granularity"] = granularity;
      SCOPED_TRACE(plan.dump() + " " + granularity);
      const auto p = test_support::prepare(doc);
      int boundary = 0;
      for (int rank = 0; rank < 2; ++rank) {
        const RankFlow flow = check_rank(p->lowered.graph, rank);
        EXPECT_GT(flow.bound_ops, 0);
        boundary += flow.boundary_reads;
      }
      EXPECT_EQ(boundary > 0, plan.contains("pp"));
    }
  }
}

}  // namespace
}  // namespace dtsim
