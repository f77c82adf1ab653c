// CpuTaskWork: compute tasks run their ops on the CPU kernels, allocations are real and
// reused (persistent state held across steps, freed blocks handed out again), and what the
// CPU cannot run is refused before any step, naming the task and the op.
#include <gtest/gtest.h>

#include <stdexcept>

#include "executor/cpu_task_work.h"
#include "executor/rank_executor.h"
#include "tests/executor/graph_builder.h"

namespace dtsim::executor {
namespace {

using testing::add_task;

// The graphs here send no message: a call to it is a test failure.
class NoMessages final : public Communicator {
 public:
  void collective(uint32_t, const TaskView& t) override { fail(t); }
  void send(TaskId, const TaskView& t) override { fail(t); }
  void recv(TaskId, const TaskView& t) override { fail(t); }

 private:
  static void fail(const TaskView& t) {
    throw std::logic_error("unexpected message task " + std::string(t.name));
  }
};

OpSignature fp32_gemm(int64_t m, int64_t n, int64_t k) {
  OpSignature op;
  op.name = "linear";
  op.kind = KernelKind::kGemm;
  op.storage = op.math = DType::kFp32;
  op.gemm = {m, n, k, 1, false, true};
  op.flops = op.gemm.flops();
  return op;
}

TaskId add_memory(TaskGraph& g, TaskKind kind, uint32_t buffer, int64_t bytes,
                  std::vector<TaskId> deps = {}) {
  Task t;
  t.kind = kind;
  t.rank = 0;
  t.stream = g.stream("compute");
  t.name = (kind == TaskKind::kAlloc ? "alloc " : "free ") + std::to_string(buffer);
  t.buffer = buffer;
  t.bytes = Bytes(bytes);
  t.deps = std::move(deps);
  return g.add(t);
}

TEST(CpuTaskWork, RunsEachComputeTasksOpsOnBuffersOfTheirOwn) {
  TaskGraph g;
  const std::vector<OpSignature> ops = {fp32_gemm(64, 32, 16), fp32_gemm(64, 16, 32)};
  Task t;
  t.kind = TaskKind::kCompute;
  t.name = "layer";
  t.stream = g.stream("compute");
  t.ops = g.add_op_list(ops);
  g.add(t);
  g.add(t);  // the same op list again shares the buffers
  const RankPlan plan = plan_rank(g, 0);
  NoMessages comm;
  CpuTaskWork work(g, plan, comm);
  // A, B and C of each GEMM in fp32, prepared once for the list.
  const int64_t expected = 4 * (64 * 16 + 32 * 16 + 64 * 32) + 4 * (64 * 32 + 16 * 32 + 64 * 16);
  EXPECT_EQ(work.operand_bytes(), expected);
  RankExecutor ex(g, plan, work);
  const StepTimes times = ex.run_step();
  for (const TaskSpan& s : times.tasks) EXPECT_LT(s.start_ns, s.end_ns);
  // Each op's own time, inside its task's.
  ASSERT_EQ(work.op_times().size(), 2u);
  for (size_t task = 0; task < 2; ++task) {
    const auto& ops_ns = work.op_times()[task];
    ASSERT_EQ(ops_ns.size(), 2u);
    EXPECT_GT(ops_ns[0], 0);
    EXPECT_GT(ops_ns[1], 0);
    EXPECT_LE(ops_ns[0] + ops_ns[1], times.tasks[task].end_ns - times.tasks[task].start_ns);
  }
}

TEST(CpuTaskWork, OneOpListOnTwoStreamsGetsTwoSetsOfBuffers) {
  TaskGraph g;
  Task t;
  t.kind = TaskKind::kCompute;
  t.name = "layer";
  t.ops = g.add_op_list(std::vector<OpSignature>{fp32_gemm(16, 16, 16)});
  t.stream = g.stream("compute");
  g.add(t);
  t.stream = g.stream("side");  // may run at the same time as the first
  g.add(t);
  NoMessages comm;
  const CpuTaskWork work(g, plan_rank(g, 0), comm);
  EXPECT_EQ(work.operand_bytes(), 2 * 4 * (3 * 16 * 16));
}

OpSignature fp32_relu(int64_t rows, int64_t width) {
  OpSignature op;
  op.name = "relu";
  op.kind = KernelKind::kRelu;
  op.storage = op.math = DType::kFp32;
  op.rows = rows;
  op.width = width;
  op.bytes = 2.0 * 4 * static_cast<double>(rows * width);
  return op;
}

// A linear layer (its weight bound, its input the kernel's own) and a ReLU that reads its
// result, for micro-batch `mb`.
TaskId add_linear_relu(TaskGraph& g, uint32_t mb) {
  const TensorRef linear_out{TensorRole::kOutput, 0, 0};
  const std::vector<OpOperands> operands = {
      {{"b", {TensorRole::kWeight, 0, 0}, 0}, {"c", linear_out, 0}},
      {{"x", linear_out, 0}, {"y", {TensorRole::kOutput, 0, 1}, 0}}};
  Task t;
  t.kind = TaskKind::kCompute;
  t.name = "layer mb" + std::to_string(mb);
  t.stream = g.stream("compute");
  t.ops = g.add_op_list(std::vector<OpSignature>{fp32_gemm(8, 16, 4), fp32_relu(8, 16)}, operands);
  t.tag = mb;
  return g.add(t);
}

TEST(CpuTaskWork, OpsRunOnTheTensorsTheyBindOneSetOfActivationsPerMicroBatch) {
  TaskGraph g;
  add_linear_relu(g, 0);
  add_linear_relu(g, 1);
  const RankPlan plan = plan_rank(g, 0);
  NoMessages comm;
  CpuTaskWork work(g, plan, comm);
  const TensorStore& store = work.tensors();
  EXPECT_EQ(store.state_tensors(), 1u);
  EXPECT_EQ(store.activation_tensors(), 2u);
  EXPECT_EQ(store.micro_batches(), 2u);
  RankExecutor ex(g, plan, work);
  ex.run_step();
  // The ReLU read the GEMM's result: its output is that result's positive part, per
  // micro-batch, and the two micro-batches' tensors are apart.
  for (uint32_t mb : {0u, 1u}) {
    const auto* x = reinterpret_cast<const float*>(store.data({TensorRole::kOutput, 0, 0}, mb));
    const auto* y = reinterpret_cast<const float*>(store.data({TensorRole::kOutput, 0, 1}, mb));
    int positive = 0;
    for (int i = 0; i < 8 * 16; ++i) {
      ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f) << "micro-batch " << mb << ", element " << i;
      positive += x[i] > 0;
    }
    EXPECT_GT(positive, 0);
    EXPECT_LT(positive, 8 * 16);
  }
  EXPECT_NE(store.data({TensorRole::kOutput, 0, 0}, 0), store.data({TensorRole::kOutput, 0, 0}, 1));
  // The weight is one tensor for both.
  EXPECT_EQ(store.data({TensorRole::kWeight, 0, 0}, 0), store.data({TensorRole::kWeight, 0, 0}, 1));
  // Only the GEMM's input is its own scratch now (A of 8 x 4 per stream's set).
  EXPECT_EQ(work.operand_bytes(), store.bytes() + 4 * 8 * 4);
}

TEST(CpuTaskWork, RefusesBindingsItCannotHonourNamingTheTaskAndTheOp) {
  const auto refusal = [](OpOperands operands, uint32_t mb) {
    TaskGraph g;
    Task t;
    t.kind = TaskKind::kCompute;
    t.name = "odd layer";
    t.stream = g.stream("compute");
    t.ops = g.add_op_list(std::vector<OpSignature>{fp32_gemm(8, 8, 8)},
                          std::vector<OpOperands>{std::move(operands)});
    t.tag = mb;
    g.add(t);
    NoMessages comm;
    try {
      CpuTaskWork work(g, plan_rank(g, 0), comm);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string unknown = refusal({{"z", {TensorRole::kWeight, 0, 0}, 0}}, 0);
  EXPECT_NE(unknown.find("\"odd layer\""), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("operand \"z\""), std::string::npos) << unknown;
  const std::string no_mb = refusal({{"c", {TensorRole::kOutput, 0, 0}, 0}}, kNoMicroBatch);
  EXPECT_NE(no_mb.find("no micro-batch"), std::string::npos) << no_mb;
  const std::string negative = refusal({{"c", {TensorRole::kOutput, 0, 0}, -1}}, 0);
  EXPECT_NE(negative.find("\"odd layer\""), std::string::npos) << negative;
  EXPECT_NE(negative.find("offset -1"), std::string::npos) << negative;
}

// An op the CPU cannot run is refused before any step, naming its task, whether its
// operands are its own or bound to tensors.
TEST(CpuTaskWork, RefusesAnOpTheCpuCannotRunBeforeAnyStep) {
  OpSignature bf16 = fp32_gemm(8, 8, 8);
  bf16.storage = bf16.math = DType::kBf16;
  for (const OpOperands& operands :
       {OpOperands{}, OpOperands{{"b", {TensorRole::kWeight, 0, 0}, 0}}}) {
    TaskGraph g;
    Task t;
    t.kind = TaskKind::kCompute;
    t.name = "bf16 layer";
    t.stream = g.stream("compute");
    t.ops = g.add_op_list(std::vector<OpSignature>{bf16}, std::vector<OpOperands>{operands});
    g.add(t);
    NoMessages comm;
    try {
      CpuTaskWork work(g, plan_rank(g, 0), comm);
      FAIL() << "expected kernels::UnsupportedOp";
    } catch (const kernels::UnsupportedOp& e) {
      EXPECT_NE(std::string(e.what()).find("\"bf16 layer\""), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos) << e.what();
    }
  }
}

TEST(CpuTaskWork, PersistentStateIsHeldAcrossStepsAndFreedBlocksAreReused) {
  TaskGraph g;
  add_memory(g, TaskKind::kAlloc, 1, 1 << 20);                     // weights: never freed
  const TaskId act = add_memory(g, TaskKind::kAlloc, 2, 4 << 20);  // activations
  add_memory(g, TaskKind::kFree, 2, 4 << 20, {act});
  const RankPlan plan = plan_rank(g, 0);
  NoMessages comm;
  CpuTaskWork work(g, plan, comm);
  RankExecutor ex(g, plan, work);
  ex.run_step();
  EXPECT_EQ(work.peak_allocated_bytes(), 5 << 20);
  // The next steps find the weights held and the activations' block cached.
  ex.run_step();
  ex.run_step();
  EXPECT_EQ(work.peak_allocated_bytes(), 5 << 20);
}

TEST(CpuTaskWork, AFreeOfABufferTheRankDoesNotHoldFailsTheTask) {
  TaskGraph g;
  add_memory(g, TaskKind::kFree, 9, 64);
  const RankPlan plan = plan_rank(g, 0);
  NoMessages comm;
  CpuTaskWork work(g, plan, comm);
  RankExecutor ex(g, plan, work);
  EXPECT_THROW(ex.run_step(), std::invalid_argument);
}

TEST(CpuTaskWork, MessagesGoToTheCommunicator) {
  TaskGraph g;
  add_task(g, TaskKind::kSend, 0, "pp", "send");
  const RankPlan plan = plan_rank(g, 0);
  NoMessages comm;
  CpuTaskWork work(g, plan, comm);
  RankExecutor ex(g, plan, work);
  EXPECT_THROW(ex.run_step(), std::logic_error);
}

}  // namespace
}  // namespace dtsim::executor
