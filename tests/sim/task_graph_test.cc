// TaskGraph storage: what is added reads back unchanged from the compact records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "sim/task_graph.h"

namespace dtsim {
namespace {

using testing::ElementsAre;

TEST(TaskGraphStorage, ReadsBackWhatWasAdded) {
  TaskGraph g;
  const uint16_t s = g.stream("compute");
  Task a;
  a.name = "fwd mb0 with a name longer than any small-string buffer";
  a.rank = 3;
  a.stream = s;
  OpSignature gemm;
  gemm.name = "attn.qkv";
  gemm.kind = KernelKind::kGemm;
  gemm.gemm = GemmDims{2048, 4608, 12288, 1, false, true};
  gemm.flops = 2.0 * 2048 * 4608 * 12288;
  a.ops = g.add_op_list(std::vector<OpSignature>{gemm, gemm});
  a.duration = Duration::ms(2);
  const TaskId ia = g.add(a);
  Task b;
  b.kind = TaskKind::kSend;
  b.name = "send";
  b.rank = 3;
  b.peer = 4;
  b.tag = 17;
  b.bytes = Bytes(1 << 20);
  b.duration = Duration::us(3);
  b.deps = {ia};
  const TaskId ib = g.add(b);
  Task c;
  c.kind = TaskKind::kMemcpy;
  c.memcpy_kind = MemcpyKind::kPeer;
  c.deps = {ia, ib};
  const TaskId ic = g.add(c);

  ASSERT_EQ(g.num_tasks(), 3u);
  const TaskView va = g.task(ia);
  EXPECT_EQ(va.name, a.name);
  EXPECT_EQ(va.rank, 3);
  EXPECT_EQ(va.stream, s);
  EXPECT_EQ(va.duration, Duration::ms(2));
  ASSERT_EQ(g.op_list(va.ops).size(), 2u);
  EXPECT_EQ(g.op_list(va.ops)[1], gemm);
  EXPECT_TRUE(va.deps.empty());
  const TaskView vb = g.task(ib);
  EXPECT_EQ(vb.kind, TaskKind::kSend);
  EXPECT_EQ(vb.name, "send");
  EXPECT_EQ(vb.peer, 4);
  EXPECT_EQ(vb.tag, 17u);
  EXPECT_EQ(vb.bytes, Bytes(1 << 20));
  EXPECT_EQ(vb.duration, Duration::us(3));
  EXPECT_EQ(vb.ops, kNoOps);
  EXPECT_THAT(vb.deps, ElementsAre(ia));
  const TaskView vc = g.task(ic);
  EXPECT_EQ(vc.memcpy_kind, MemcpyKind::kPeer);
  EXPECT_EQ(vc.ops, kNoOps);
  EXPECT_THAT(vc.deps, ElementsAre(ia, ib));
  // Iteration visits the same views in id order.
  size_t i = 0;
  for (const TaskView t : g.tasks()) EXPECT_EQ(t.name, g.task(static_cast<TaskId>(i++)).name);
  EXPECT_EQ(i, 3u);
}

TEST(TaskGraphStorage, CollectiveMembersShareOneName) {
  TaskGraph g;
  g.add_collective_with_tasks(
      CollectiveCall{CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {0, 1, 2, 3},
                     Bytes(1 << 20), {}, "dp all-reduce bucket 0"},
      g.stream("comm"));
  ASSERT_EQ(g.num_tasks(), 4u);
  for (TaskId id = 0; id < 4; ++id) {
    EXPECT_EQ(g.task(id).name, "dp all-reduce bucket 0");
    EXPECT_EQ(g.task(id).rank, static_cast<int>(id));
    // One copy of the characters, viewed four times.
    EXPECT_EQ(g.task(id).name.data(), g.task(0).name.data());
  }
}

TEST(TaskGraphStorage, RefusesAnOpListItDoesNotHold) {
  TaskGraph g;
  Task t;
  t.name = "bad";
  t.ops = 0;
  EXPECT_THROW(g.add(t), std::invalid_argument);
  EXPECT_EQ(g.num_tasks(), 0u);
}

// A runtime counts a task's unfinished dependencies in 24 bits: one more is refused when the
// task is added, and the graph keeps what it had.
TEST(TaskGraphStorage, RefusesATaskWithMoreDependenciesThanARuntimeCounts) {
  TaskGraph g;
  g.add(Task{});
  Task t;
  t.name = "barrier";
  t.deps.assign(TaskGraph::kMaxDependencies + 1, 0);
  try {
    g.add(t);
    ADD_FAILURE() << "no error";
  } catch (const std::length_error& e) {
    EXPECT_NE(std::string(e.what()).find("task \"barrier\" has 16777216 dependencies; a task has "
                                         "at most 16777215"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(g.num_tasks(), 1u);
}

// Equal lists are stored once; a list that differs in any field (here one transpose flag,
// then the order) is a list of its own.
TEST(TaskGraphStorage, StoresEachDistinctOpListOnce) {
  TaskGraph g;
  OpSignature norm;
  norm.name = "attn.norm";
  norm.kind = KernelKind::kLayerNorm;
  norm.rows = 2048;
  norm.width = 12288;
  OpSignature gemm;
  gemm.name = "attn.qkv";
  gemm.kind = KernelKind::kGemm;
  gemm.gemm = GemmDims{2048, 4608, 12288, 1, false, true};
  const OpListId a = g.add_op_list(std::vector<OpSignature>{norm, gemm});
  EXPECT_EQ(g.add_op_list(std::vector<OpSignature>{norm, gemm}), a);
  OpSignature other = gemm;
  other.gemm.transpose_b = false;
  const OpListId b = g.add_op_list(std::vector<OpSignature>{norm, other});
  const OpListId c = g.add_op_list(std::vector<OpSignature>{gemm, norm});
  EXPECT_NE(b, a);
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  EXPECT_EQ(g.num_op_lists(), 3u);
  EXPECT_EQ(g.op_list(c)[0], gemm);
  EXPECT_EQ(g.op_list(b)[1].gemm.transpose_b, false);
  // The same kernels on other tensors (the next layer's) are a list of their own; the
  // same kernels on the same tensors are the same list.
  const std::vector<OpOperands> layer3 = {{{"x", {TensorRole::kOutput, 3, 0}, 0}},
                                          {{"b", {TensorRole::kWeight, 3, 1}, 0}}};
  std::vector<OpOperands> layer4 = layer3;
  layer4[0][0].tensor.layer = 4;
  layer4[1][0].tensor.layer = 4;
  const std::vector<OpSignature> kernels{norm, gemm};
  const OpListId d = g.add_op_list(kernels, layer3);
  EXPECT_NE(d, a);
  EXPECT_NE(g.add_op_list(kernels, layer4), d);
  EXPECT_EQ(g.add_op_list(kernels, layer3), d);
  EXPECT_EQ(g.op_operands(d)[1][0].tensor, (TensorRef{TensorRole::kWeight, 3, 1}));
  EXPECT_TRUE(g.op_operands(a)[0].empty());
  EXPECT_THROW(g.add_op_list(kernels, std::vector<OpOperands>(1)), std::invalid_argument);
}

// A linear layer's backward GEMMs (Megatron's QKV: 2048 tokens, 12288 in, 4608 out per
// rank): dX[2048, 12288] = dY[2048, 4608] W[4608, 12288], and dW[4608, 12288] = dY^T X.
TEST(OpSignature, BackwardGemmsOfALinearLayer) {
  const GemmDims forward{2048, 4608, 12288, 1, false, true};
  const GemmDims data = backward_data_gemm(forward);
  EXPECT_EQ(data, (GemmDims{2048, 12288, 4608, 1, false, false}));
  const GemmDims weight = backward_weight_gemm(forward);
  EXPECT_EQ(weight, (GemmDims{4608, 12288, 2048, 1, true, false}));
  // Attention over V (B = V stored [k, n]): dV[s, d] = P^T dO, output [k, n].
  const GemmDims context{2048, 128, 2048, 96, false, false};
  EXPECT_EQ(backward_data_gemm(context), (GemmDims{2048, 2048, 128, 96, false, true}));
  EXPECT_EQ(backward_weight_gemm(context), (GemmDims{2048, 128, 2048, 96, true, false}));
}

TEST(OpSignature, NamesRoundTrip) {
  for (int k = 0; k <= static_cast<int>(kLastKernelKind); ++k) {
    const auto kind = static_cast<KernelKind>(k);
    EXPECT_EQ(kernel_kind_from_name(kernel_kind_name(kind)), kind);
  }
  for (int p = 0; p <= static_cast<int>(OpPass::kStep); ++p) {
    const auto pass = static_cast<OpPass>(p);
    EXPECT_EQ(op_pass_from_name(op_pass_name(pass)), pass);
  }
  EXPECT_EQ(kernel_kind_from_name("matmul"), std::nullopt);
}

// Dependencies are held as distances back: a task's list reads back as the ids it was
// given, and equal distances are stored alike for any two tasks.
TEST(TaskGraphStorage, DependenciesReadBackAsIds) {
  TaskGraph g;
  Task t;
  t.name = "first";
  g.add(t);
  t.name = "second";
  t.deps = {0};
  g.add(t);
  for (int i = 0; i < 98; ++i) {
    t.name = "more";
    t.deps = {1, static_cast<TaskId>(i + 1)};
    g.add(t);
  }
  EXPECT_EQ(g.num_tasks(), 100u);
  EXPECT_EQ(g.task(0).name, "first");
  EXPECT_THAT(g.task(1).deps, ElementsAre(0u));
  EXPECT_THAT(g.task(99).deps, ElementsAre(1u, 98u));
  EXPECT_EQ(g.task(99).deps[1], 98u);
  EXPECT_EQ(std::vector<TaskId>(g.task(50).deps.begin(), g.task(50).deps.end()),
            (std::vector<TaskId>{1, 49}));
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

Task memory_task(TaskKind kind, uint32_t buffer, int64_t bytes, int rank = 0) {
  Task t;
  t.kind = kind;
  t.rank = rank;
  t.name = kind == TaskKind::kAlloc ? "alloc" : "free";
  t.bytes = Bytes(bytes);
  t.buffer = buffer;
  t.memory = MemoryCategory::kActivations;
  return t;
}

TEST(TaskGraphValidate, FreesNameABufferTheirRankHolds) {
  TaskGraph g;
  g.stream("compute");
  g.add(memory_task(TaskKind::kAlloc, 1, 100));
  g.add(memory_task(TaskKind::kFree, 1, 100));
  g.add(memory_task(TaskKind::kFree, 0, 5));  // no buffer given: not paired
  EXPECT_TRUE(g.validate(2).empty());
  g.add(memory_task(TaskKind::kFree, 1, 100));      // freed already
  g.add(memory_task(TaskKind::kAlloc, 2, 100, 1));  // on rank 1
  g.add(memory_task(TaskKind::kFree, 2, 64, 1));    // other bytes
  g.add(memory_task(TaskKind::kAlloc, 3, 8));
  g.add(memory_task(TaskKind::kAlloc, 3, 8));  // held already
  const std::vector<std::string> errors = g.validate(2);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].find("frees buffer 1, which its rank does not hold"), std::string::npos);
  EXPECT_NE(errors[1].find("frees 64 bytes of buffer 2, allocated with 100"), std::string::npos);
  EXPECT_NE(errors[2].find("allocates buffer 3, which its rank holds already"), std::string::npos);
}

Task p2p_task(TaskKind kind, int rank, int peer, std::optional<PipelineTransfer> moved) {
  Task t;
  t.kind = kind;
  t.rank = rank;
  t.peer = peer;
  t.name = kind == TaskKind::kSend ? "send" : "recv";
  t.bytes = Bytes(64);
  t.transfer = moved;
  return t;
}

TEST(TaskGraphStorage, TransfersBelongToSendsAndRecvsAndReadBack) {
  TaskGraph g;
  g.stream("compute");
  const PipelineTransfer act{PipelineTensor::kActivations, 3, 1};
  const TaskId send = g.add(p2p_task(TaskKind::kSend, 0, 1, act));
  const TaskId plain = g.add(p2p_task(TaskKind::kSend, 0, 1, std::nullopt));
  const TaskId recv = g.add(p2p_task(TaskKind::kRecv, 1, 0, act));
  EXPECT_EQ(g.transfer(send), act);
  EXPECT_EQ(g.transfer(plain), std::nullopt);
  EXPECT_EQ(g.transfer(recv), act);
  EXPECT_EQ(g.num_transfers(), 2u);
  Task compute;
  compute.name = "gemm";
  compute.transfer = act;
  EXPECT_THROW(g.add(compute), std::invalid_argument);
  for (PipelineTensor t : {PipelineTensor::kActivations, PipelineTensor::kActivationGradients}) {
    EXPECT_EQ(pipeline_tensor_from_name(pipeline_tensor_name(t)), t);
  }
  EXPECT_FALSE(pipeline_tensor_from_name("weights"));
}

// The pairing a runtime and the critical path read (message_pairs) is the one validation
// checks: per (sender, receiver, tag), the n-th send in id order meets the n-th recv,
// whatever keys lie between; a key sent more often than received pairs none of its
// messages, and validation names it.
TEST(TaskGraphValidate, MessagePairsAreTheOnesValidationChecks) {
  TaskGraph g;
  g.stream("compute");
  const TaskId r0 = g.add(p2p_task(TaskKind::kRecv, 1, 0, std::nullopt));
  const TaskId back = g.add(p2p_task(TaskKind::kSend, 1, 0, std::nullopt));
  const TaskId s0 = g.add(p2p_task(TaskKind::kSend, 0, 1, std::nullopt));
  const TaskId back_recv = g.add(p2p_task(TaskKind::kRecv, 0, 1, std::nullopt));
  const TaskId s1 = g.add(p2p_task(TaskKind::kSend, 0, 1, std::nullopt));
  const TaskId r1 = g.add(p2p_task(TaskKind::kRecv, 1, 0, std::nullopt));
  std::vector<TaskGraph::MessagePair> checked;
  ASSERT_TRUE(g.validate(2, &checked).empty());
  const std::vector<TaskGraph::MessagePair> pairs = g.message_pairs();
  ASSERT_EQ(pairs.size(), 3u);
  // In key order: (0 -> 1) before (1 -> 0).
  EXPECT_EQ(pairs[0].send, s0);
  EXPECT_EQ(pairs[0].recv, r0);
  EXPECT_EQ(pairs[1].send, s1);
  EXPECT_EQ(pairs[1].recv, r1);
  EXPECT_EQ(pairs[2].send, back);
  EXPECT_EQ(pairs[2].recv, back_recv);
  ASSERT_EQ(checked.size(), pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(checked[i].send, pairs[i].send);
    EXPECT_EQ(checked[i].recv, pairs[i].recv);
  }
  Task tagged = p2p_task(TaskKind::kSend, 0, 1, std::nullopt);
  tagged.tag = 7;
  g.add(tagged);
  g.add(tagged);
  g.add(p2p_task(TaskKind::kRecv, 1, 0, std::nullopt));  // tag 0: (0 -> 1, 0) now has 2 recvs
  EXPECT_EQ(g.message_pairs().size(), 1u);               // only (1 -> 0, 0) still pairs
  const std::vector<std::string> errors = g.validate(2);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0],
            "send/recv from rank 0 to rank 1 with tag 0: 1 recv(s) without a matching send");
  EXPECT_EQ(errors[1],
            "send/recv from rank 0 to rank 1 with tag 7: 2 send(s) without a matching recv");
  // A send to no rank is named, and its key comes before the valid ones, in rank order.
  g.add(p2p_task(TaskKind::kSend, 0, -1, std::nullopt));
  const std::vector<std::string> with_negative = g.validate(2);
  ASSERT_EQ(with_negative.size(), 4u);
  EXPECT_NE(with_negative[0].find("peer -1 is not another rank"), std::string::npos);
  EXPECT_EQ(with_negative[1],
            "send/recv from rank 0 to rank -1 with tag 0: 1 send(s) without a matching recv");
  EXPECT_EQ(with_negative[2], errors[0]);
}

// A call's tasks must sit on its members, one each, in whatever order the members are
// listed: a task on another rank, a second task on a member, or a member without one is
// named.
TEST(TaskGraphValidate, EveryMemberOfACallHoldsExactlyOneTask) {
  const auto graph = [](std::vector<int> members, std::vector<int> task_ranks) {
    TaskGraph g;
    const uint16_t comm = g.stream("comm");
    const uint32_t c = g.add_collective(CollectiveCall{
        CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, members, Bytes(64), {}, "ar"});
    for (int r : task_ranks) {
      Task t;
      t.kind = TaskKind::kCollective;
      t.rank = r;
      t.stream = comm;
      t.collective = c;
      t.name = "ar";
      g.add(t);
    }
    return g.validate(4);
  };
  EXPECT_TRUE(graph({2, 0, 3}, {3, 2, 0}).empty());
  const std::string wrong =
      "collective 0 (\"ar\"): its tasks are on 3 rank(s) but it has 3 member(s); every member "
      "needs exactly one task";
  EXPECT_EQ(graph({2, 0, 3}, {3, 1, 0}), std::vector<std::string>{wrong});
  EXPECT_EQ(graph({0, 1, 2}, {0, 1, 1}), std::vector<std::string>{wrong});
  EXPECT_EQ(graph({0, 1, 2}, {0, 1}).size(), 1u);
  const std::vector<std::string> extra = graph({0, 1}, {0, 1, 1});
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_NE(extra[0].find("its tasks are on 3 rank(s) but it has 2 member(s)"), std::string::npos);
}

TEST(TaskGraphValidate, ASendAndItsRecvMoveTheSameTensor) {
  const PipelineTransfer act{PipelineTensor::kActivations, 0, 2};
  const PipelineTransfer grad{PipelineTensor::kActivationGradients, 0, 2};
  TaskGraph g;
  g.stream("compute");
  // Matched in order per (sender, receiver, tag): the first send meets the first recv.
  g.add(p2p_task(TaskKind::kSend, 0, 1, act));
  g.add(p2p_task(TaskKind::kSend, 0, 1, grad));
  g.add(p2p_task(TaskKind::kRecv, 1, 0, act));
  g.add(p2p_task(TaskKind::kRecv, 1, 0, grad));
  EXPECT_TRUE(g.validate(2).empty());
  TaskGraph swapped;
  swapped.stream("compute");
  swapped.add(p2p_task(TaskKind::kSend, 0, 1, act));
  swapped.add(p2p_task(TaskKind::kRecv, 1, 0, grad));
  swapped.add(p2p_task(TaskKind::kSend, 0, 1, std::nullopt));
  swapped.add(p2p_task(TaskKind::kRecv, 1, 0, act));
  const std::vector<std::string> errors = swapped.validate(2);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("task 0 (\"send\", rank 0) and task 1 (\"recv\", rank 1): a send and "
                           "the recv it meets move different pipeline tensors"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("task 2 (\"send\", rank 0) and task 3"), std::string::npos) << errors[1];
}

TEST(TaskGraphStorage, MemoryCategoryNamesRoundTrip) {
  for (MemoryCategory c : kAllMemoryCategories) {
    EXPECT_EQ(memory_category_from_name(memory_category_name(c)), c);
  }
  EXPECT_FALSE(memory_category_from_name("stuff"));
}

}  // namespace
}  // namespace dtsim
