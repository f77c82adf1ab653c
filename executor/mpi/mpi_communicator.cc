// MpiCommunicator: groups built once, buffers sized once, blocking MPI calls per task.
#include "executor/mpi/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <set>
#include <stdexcept>

#include "executor/rank_executor.h"
#include "kernels/bf16.h"
#include "sim/dtype.h"

namespace dtsim::executor {

namespace {

// bf16 and fp16 have no MPI type: their reductions run through user ops that widen each
// element to fp32, combine, and round back to nearest even, as a GPU's reduction kernel does.
using kernels::bf16_to_float;
using kernels::float_to_bf16;
float fp16_to_float(uint16_t h) {
  _Float16 v;
  std::memcpy(&v, &h, sizeof v);
  return static_cast<float>(v);
}
uint16_t float_to_fp16(float f) {
  const auto v = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &v, sizeof h);
  return h;
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), typename Combine>
void combine16(void* in, void* inout, int* len, Combine combine) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Narrow(combine(Widen(a[i]), Widen(b[i])));
}
float add(float a, float b) { return a + b; }
float larger(float a, float b) { return std::max(a, b); }
float smaller(float a, float b) { return std::min(a, b); }
void bf16_sum(void* in, void* io, int* n, MPI_Datatype*) {
  combine16<bf16_to_float, float_to_bf16>(in, io, n, add);
}
void bf16_max(void* in, void* io, int* n, MPI_Datatype*) {
  combine16<bf16_to_float, float_to_bf16>(in, io, n, larger);
}
void bf16_min(void* in, void* io, int* n, MPI_Datatype*) {
  combine16<bf16_to_float, float_to_bf16>(in, io, n, smaller);
}
void fp16_sum(void* in, void* io, int* n, MPI_Datatype*) {
  combine16<fp16_to_float, float_to_fp16>(in, io, n, add);
}
void fp16_max(void* in, void* io, int* n, MPI_Datatype*) {
  combine16<fp16_to_float, float_to_fp16>(in, io, n, larger);
}
void fp16_min(void* in, void* io, int* n, MPI_Datatype*) {
  combine16<fp16_to_float, float_to_fp16>(in, io, n, smaller);
}

struct Ops16 {
  MPI_Op bf16[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum, max, min
  MPI_Op fp16[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
};
Ops16& ops16() {
  static Ops16 ops = [] {
    Ops16 o;
    MPI_Op_create(bf16_sum, 1, &o.bf16[0]);
    MPI_Op_create(bf16_max, 1, &o.bf16[1]);
    MPI_Op_create(bf16_min, 1, &o.bf16[2]);
    MPI_Op_create(fp16_sum, 1, &o.fp16[0]);
    MPI_Op_create(fp16_max, 1, &o.fp16[1]);
    MPI_Op_create(fp16_min, 1, &o.fp16[2]);
    return o;
  }();
  return ops;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::kFp64:
      return MPI_DOUBLE;
    case DType::kFp32:
    case DType::kTf32:
      return MPI_FLOAT;
    case DType::kFp16:
    case DType::kBf16:
      return MPI_UINT16_T;
    case DType::kFp8:
      return MPI_UINT8_T;
    case DType::kInt8:
      return MPI_INT8_T;
  }
  return MPI_BYTE;
}

// How elements combine. An average reduces as a sum: the 1/n is a scalar that the optimizer
// applies to the summed gradients (NCCL's ncclAvg scales inside its kernel at no extra pass).
MPI_Op mpi_op(DType t, ReduceOp r) {
  const int which = r == ReduceOp::kMax ? 1 : r == ReduceOp::kMin ? 2 : 0;
  if (t == DType::kBf16) return ops16().bf16[which];
  if (t == DType::kFp16) return ops16().fp16[which];
  return which == 1 ? MPI_MAX : which == 2 ? MPI_MIN : MPI_SUM;
}

std::string describe_call(uint32_t id, const CollectiveCall& c) {
  return "collective " + std::to_string(id) + " (\"" + c.label + "\", " +
         std::string(collective_op_name(c.op)) + ")";
}

// Elements of the whole buffer and of one member's part (nccl-tests' size, as the probe
// and the simulator count it: CollectivePlan::bytes).
struct Counts {
  int64_t whole = 0;
  int64_t part = 0;
};
Counts counts_of(uint32_t id, const CollectiveCall& c) {
  const int64_t size = dtype_size_bytes(c.dtype);
  const auto p = static_cast<int64_t>(c.members.size());
  Counts n;
  n.whole = c.bytes_per_call().count() / size;
  n.part = n.whole / p;
  if (n.whole > INT_MAX) {
    throw std::invalid_argument(describe_call(id, c) + ": " + std::to_string(n.whole) +
                                " elements, more than one MPI call takes (2^31 - 1)");
  }
  if (is_reducing(c.op) && c.dtype == DType::kFp8) {
    throw std::invalid_argument(describe_call(id, c) +
                                ": MPI has no fp8 arithmetic to reduce with on a CPU");
  }
  return n;
}

// Bytes the call reads from and writes to on each member.
std::pair<int64_t, int64_t> footprint(const CollectiveCall& c, const Counts& n) {
  const int64_t size = dtype_size_bytes(c.dtype);
  switch (c.op) {
    case CollectiveOp::kReduceScatter:
      return {n.whole * size, n.part * size};
    case CollectiveOp::kAllGather:
      return {n.part * size, n.whole * size};
    default:
      return {n.whole * size, n.whole * size};
  }
}

void check(int rc, const std::string& what);

void check(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw std::runtime_error(what + ": " + std::string(text, static_cast<size_t>(length)));
}

bool test(MPI_Request& request, const std::string& what) {
  int done = 0;
  check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
  return done != 0;
}

}  // namespace

MpiCommunicator::MpiCommunicator(const TaskGraph& graph, const RankPlan& plan, MPI_Comm world,
                                 Doorbells& bells)
    : graph_(graph), rank_(plan.rank), bells_(bells) {
  MPI_Comm_dup(world, &p2p_);
  MPI_Comm_set_errhandler(p2p_, MPI_ERRORS_RETURN);
  int* bound = nullptr;
  int found = 0;
  MPI_Comm_get_attr(world, MPI_TAG_UB, &bound, &found);
  if (found && bound) tag_bound_ = *bound;
  ops16();

  // A call's stream is its first task's: the same on every rank, as every rank sees the same
  // graph, so every member keys the call's communicator alike.
  const auto& calls = graph.collectives();
  std::vector<int> stream_of_call(calls.size(), -1);
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const TaskView t = graph.task(id);
    if (t.kind == TaskKind::kCollective && stream_of_call[t.collective] < 0) {
      stream_of_call[t.collective] = t.stream;
    }
  }
  std::map<std::pair<std::vector<int>, uint16_t>, std::pair<int64_t, int64_t>> sizes;
  for (uint32_t c = 0; c < calls.size(); ++c) {
    if (stream_of_call[c] < 0) continue;
    const Counts n = counts_of(c, calls[c]);
    const auto [in, out] = footprint(calls[c], n);
    auto& s = sizes[{calls[c].members, static_cast<uint16_t>(stream_of_call[c])}];
    s.first = std::max(s.first, in);
    s.second = std::max(s.second, out);
  }
  // MPI_Comm_create_group is collective over the group only: every member creates the
  // group's communicators in the same (sorted) order, with the key's index as its tag.
  MPI_Group world_group;
  MPI_Comm_group(world, &world_group);
  int index = 0;
  for (const auto& [key, size] : sizes) {
    const std::vector<int>& members = key.first;
    if (std::find(members.begin(), members.end(), rank_) != members.end()) {
      MPI_Group g;
      MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &g);
      Group group;
      check(MPI_Comm_create_group(world, g, index, &group.comm),
            "creating the communicator of ranks of a collective group");
      MPI_Group_free(&g);
      MPI_Comm_set_errhandler(group.comm, MPI_ERRORS_RETURN);
      group.in.assign(static_cast<size_t>(size.first), std::byte{1});
      group.out.assign(static_cast<size_t>(size.second), std::byte{0});
      groups_.emplace(key, std::move(group));
    }
    ++index;
  }
  MPI_Group_free(&world_group);
  group_of_call_.assign(calls.size(), nullptr);
  std::map<std::pair<std::vector<int>, uint16_t>, uint16_t> local_stream;
  for (TaskId id : plan.tasks) {
    const TaskView t = graph.task(id);
    if (t.kind == TaskKind::kCollective) {
      const std::pair key{calls[t.collective].members,
                          static_cast<uint16_t>(stream_of_call[t.collective])};
      // Two streams of one rank calling on one communicator could interleave their calls
      // differently on different ranks, which MPI forbids.
      if (auto [it, added] = local_stream.try_emplace(key, t.stream);
          !added && it->second != t.stream) {
        throw std::invalid_argument(describe_call(t.collective, calls[t.collective]) + ": rank " +
                                    std::to_string(rank_) +
                                    " calls its group's collectives from two streams");
      }
      group_of_call_[t.collective] = &groups_.at(key);
    }
    if (t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv) {
      if (t.tag > static_cast<uint32_t>(tag_bound_)) {
        throw std::invalid_argument("task " + std::to_string(id) + " (\"" + std::string(t.name) +
                                    "\"): tag " + std::to_string(t.tag) + " is above MPI's " +
                                    std::to_string(tag_bound_));
      }
      if (t.bytes.count() > INT_MAX) {
        throw std::invalid_argument("task " + std::to_string(id) + " (\"" + std::string(t.name) +
                                    "\"): " + std::to_string(t.bytes.count()) +
                                    " bytes, more than one MPI message takes (2^31 - 1)");
      }
      auto& [out, in] = p2p_buffers_[t.stream];
      auto& buffer = t.kind == TaskKind::kSend ? out : in;
      if (static_cast<int64_t>(buffer.size()) < t.bytes.count()) {
        buffer.assign(static_cast<size_t>(t.bytes.count()), std::byte{1});
      }
    }
  }
}

MpiCommunicator::~MpiCommunicator() {
  for (auto& [key, g] : groups_) {
    if (g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
  }
  if (p2p_ != MPI_COMM_NULL) MPI_Comm_free(&p2p_);
}

void MpiCommunicator::collective(uint32_t id, const TaskView& task) {
  const CollectiveCall& c = graph_.collectives()[id];
  Group& g = *group_of_call_.at(id);
  const Counts n = counts_of(id, c);
  const auto whole = static_cast<int>(n.whole);
  const auto part = static_cast<int>(n.part);
  const MPI_Datatype type = mpi_type(c.dtype);
  void* in = g.in.data();
  void* out = g.out.data();
  const std::string what = describe_call(id, c) + " on rank " + std::to_string(rank_) +
                           " (task \"" + std::string(task.name) + "\")";
  // Every member is at the call once this barrier completes: the call itself then starts
  // together on every member, as the simulator starts it.
  MPI_Request arrived;
  check(MPI_Ibarrier(g.comm, &arrived), what);
  for (int m : c.members) {
    if (m != rank_) bells_.ring(m);
  }
  bells_.wait_until([&] { return test(arrived, what); });
  // A task that stands for several calls (CollectiveCall::calls) runs them one by one.
  for (int k = 0; k < c.call_count(); ++k) {
    int rc = MPI_SUCCESS;
    switch (c.op) {
      case CollectiveOp::kAllReduce:
        rc = MPI_Allreduce(in, out, whole, type, mpi_op(c.dtype, c.reduce), g.comm);
        break;
      case CollectiveOp::kReduceScatter:
        rc = MPI_Reduce_scatter_block(in, out, part, type, mpi_op(c.dtype, c.reduce), g.comm);
        break;
      case CollectiveOp::kAllGather:
        rc = MPI_Allgather(in, part, type, out, part, type, g.comm);
        break;
      case CollectiveOp::kAllToAll:
        rc = MPI_Alltoall(in, part, type, out, part, type, g.comm);
        break;
      case CollectiveOp::kBroadcast:
        rc = MPI_Bcast(in, whole, type, c.options.root, g.comm);
        break;
      case CollectiveOp::kReduce:
        rc = MPI_Reduce(in, out, whole, type, mpi_op(c.dtype, c.reduce), c.options.root, g.comm);
        break;
      case CollectiveOp::kSendRecv: {
        // The members exchange in pairs: member 0 sends to member 1, 2 to 3, ...
        int me = 0;
        MPI_Comm_rank(g.comm, &me);
        const int members = static_cast<int>(c.members.size());
        if (me % 2 == 0 && me + 1 < members) {
          rc = MPI_Send(in, whole, type, me + 1, 0, g.comm);
        } else if (me % 2 == 1) {
          rc = MPI_Recv(out, whole, type, me - 1, 0, g.comm, MPI_STATUS_IGNORE);
        }
        break;
      }
    }
    check(rc, what);
  }
}

void MpiCommunicator::send(TaskId id, const TaskView& task) {
  auto& buffer = p2p_buffers_.at(task.stream).first;
  const std::string what = "task " + std::to_string(id) + " (\"" + std::string(task.name) +
                           "\") sending to rank " + std::to_string(task.peer);
  MPI_Request sent;
  check(MPI_Isend(buffer.data(), static_cast<int>(task.bytes.count()), MPI_BYTE, task.peer,
                  static_cast<int>(task.tag), p2p_, &sent),
        what);
  bells_.ring(task.peer);
  bells_.wait_until([&] { return test(sent, what); });
}

void MpiCommunicator::recv(TaskId id, const TaskView& task) {
  auto& buffer = p2p_buffers_.at(task.stream).second;
  const std::string what = "task " + std::to_string(id) + " (\"" + std::string(task.name) +
                           "\") receiving from rank " + std::to_string(task.peer);
  // Matched probe: the message found is the one received, whatever other streams do.
  MPI_Message message;
  bells_.wait_until([&] {
    int found = 0;
    check(MPI_Improbe(task.peer, static_cast<int>(task.tag), p2p_, &found, &message,
                      MPI_STATUS_IGNORE),
          what);
    return found != 0;
  });
  bells_.ring(task.peer);  // a large message needs its sender to test while it moves
  check(MPI_Mrecv(buffer.data(), static_cast<int>(task.bytes.count()), MPI_BYTE, &message,
                  MPI_STATUS_IGNORE),
        what);
  bells_.ring(task.peer);  // its send is complete once it tests again
}

ClockOffset measure_clock_offset(MPI_Comm world, int rounds) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &ranks);
  constexpr int kTag = 7001;
  std::vector<ClockSample> samples;
  MPI_Barrier(world);
  for (int other = 1; other < ranks; ++other) {
    for (int i = 0; i < rounds; ++i) {
      if (rank == 0) {
        char ping = 0;
        MPI_Recv(&ping, 1, MPI_CHAR, other, kTag, world, MPI_STATUS_IGNORE);
        const int64_t now = steady_now_ns();
        MPI_Send(&now, 1, MPI_INT64_T, other, kTag, world);
      } else if (rank == other) {
        ClockSample s;
        const char ping = 1;
        s.sent_ns = steady_now_ns();
        MPI_Send(&ping, 1, MPI_CHAR, 0, kTag, world);
        MPI_Recv(&s.reference_ns, 1, MPI_INT64_T, 0, kTag, world, MPI_STATUS_IGNORE);
        s.received_ns = steady_now_ns();
        samples.push_back(s);
      }
    }
  }
  MPI_Barrier(world);
  if (rank == 0) return {0, 0, 0};
  return estimate_clock_offset(samples);
}

}  // namespace dtsim::executor
