// Lowering of one training iteration to a TaskGraph: per rank, the pipeline schedule's
// forward and backward steps with their tensor-, context- and expert-parallel collectives,
// pipeline sends and receives, gradient buckets overlapped with the backward pass, ZeRO
// gathers and scatters, the optimizer step, and memory over time.
#include "models/lowering.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "models/lowering_detail.h"
#include "models/memory_model.h"
#include "models/nccl_buffers.h"
#include "models/operand_binding.h"
#include "sim/check.h"
#include "sim/collectives/planner.h"
#include "sim/group_links.h"

namespace dtsim::models {

namespace {

using lowering_detail::rank_shard;
using lowering_detail::ResolvedPlan;

Bytes bytes_of(double b) { return Bytes(static_cast<int64_t>(b + 0.5)); }

// The kinds of group a rank emits collectives for; with the group's first rank they
// identify a sequence of calls that every member emits in the same order.
enum class GroupKind { kTp, kCp, kEp, kExpertTp, kDp, kExpertDp, kGeo, kWorld, kEmbedding };

class CallBook {
 public:
  // The member's next call on this group: created by the first member to reach it.
  // `proto()` makes the call where this member is the first to reach it: the other members
  // do not copy its member list.
  template <typename MakeCall>
  uint32_t next(TaskGraph& g, GroupKind kind, const std::vector<int>& members, int rank,
                MakeCall proto) {
    auto& calls = calls_[key(kind, members.front(), -1)];
    size_t& index = next_[key(kind, members.front(), rank)];
    if (index == calls.size()) calls.push_back(g.add_collective(proto()));
    return calls[index++];
  }
  // Bytes the book holds: a node and a bucket per group and per (group, member), and a call
  // id per call. `member_scale` scales the members' entries from a sample to every rank.
  double bytes(double calls, double member_scale) const {
    constexpr double kNode = 32 + sizeof(void*);  // a malloc'd node of a 16-byte pair, a bucket
    return static_cast<double>(calls_.size()) * (kNode + sizeof(std::vector<uint32_t>)) +
           calls * sizeof(uint32_t) + static_cast<double>(next_.size()) * member_scale * kNode;
  }

 private:
  static uint64_t key(GroupKind kind, int leader, int rank) {
    return (static_cast<uint64_t>(kind) << 56) | (static_cast<uint64_t>(leader) << 28) |
           static_cast<uint64_t>(rank + 1);
  }
  std::unordered_map<uint64_t, std::vector<uint32_t>> calls_;
  std::unordered_map<uint64_t, size_t> next_;
};

// A rank group as the emitter holds it: built once (StepEmitter::shared_group) and read
// by every member's context. Each member building its own copy was quadratic work: a
// 16,384-rank data-parallel group copied into each of its members.
class GroupRef {
 public:
  GroupRef() = default;
  explicit GroupRef(const std::vector<int>& members) : members_(&members) {}
  operator const std::vector<int>&() const { return *members_; }
  const std::vector<int>& members() const { return *members_; }
  size_t size() const { return members_->size(); }
  bool empty() const { return members_->empty(); }
  int front() const { return members_->front(); }

 private:
  static inline const std::vector<int> kNone;
  const std::vector<int>* members_ = &kNone;
};

struct Streams {
  uint16_t compute, dp, send_next, send_prev, recv_prev, recv_next;
  uint16_t tp;  // the compute stream unless tensor-parallel communication is overlapped
  // Activation offload's copies, one copy engine each way (named only when offloading).
  uint16_t offload = 0, reload = 0;
};

// What a pass leaves for its consumers (the pipeline send, the next pass): the last task on
// the compute stream and, when tensor-parallel communication is overlapped, its collective.
struct PassEnd {
  TaskId last;
  std::optional<TaskId> overlapped_tp;
  std::vector<TaskId> all() const {
    std::vector<TaskId> v{last};
    if (overlapped_tp) v.push_back(*overlapped_tp);
    return v;
  }
};

class StepEmitter {
 public:
  StepEmitter(const LoweringInput& in, const ResolvedPlan& rp, LoweredStep& out)
      : in_(in), rp_(rp), out_(out), g_(out.graph) {
    s_.compute = g_.stream("compute");
    s_.dp = g_.stream("dp");
    s_.send_next = g_.stream("pp_send_next");
    s_.send_prev = g_.stream("pp_send_prev");
    s_.recv_prev = g_.stream("pp_recv_prev");
    s_.recv_next = g_.stream("pp_recv_next");
    s_.tp = in.plan.tp_comm_overlap ? g_.stream("tp_overlap") : s_.compute;
    if (in.training.offload_layers > 0) {
      s_.offload = g_.stream("offload");
      s_.reload = g_.stream("reload");
    }
    per_parameter_bytes_ = per_parameter_bytes(in.training.precision, in.training.optimizer);
  }

  void emit_rank(int rank);
  // What the emitter holds until the lowering ends besides the graph: its caches of chunk
  // costs, passes and kernels (the same for any ranks that cover every stage and tensor
  // rank) and its book of calls (`calls` of them; members scaled by `member_scale`).
  double working_bytes(double calls, double member_scale) const;

 private:
  // One rank's place in the plan and what its steps share while they are emitted.
  struct RankContext {
    int rank = 0;
    RankCoords c;
    const DeviceSpec* device = nullptr;
    const Workload* w = nullptr;
    RankShard shard;
    GroupRef tp_group, cp_group, dp_group, ep_group, etp_group, edp_group, geo_group;
    TaskId last_dp = 0;
    bool has_dp = false;
    // Its chunks' costs and the parameters it holds.
    std::vector<const ChunkCost*> chunks;
    double dense = 0;
    double expert = 0;
    double tied_table = 0;  // a tied embedding table's parameters, on the first and last stage
    // The sharded classifier's share, and what it gathers, over every rank.
    const ChunkCost* classifier = nullptr;
    double classifier_features = 0;
    GroupRef world;
    // Gradient reduction.
    bool bucketed = false;
    CollectiveOp grad_op = CollectiveOp::kAllReduce;
    CollectiveAlgorithm grad_algorithm = CollectiveAlgorithm::kAuto;
    bool tp_analytical = false;
    // Progress through the schedule.
    std::vector<TaskId> step_compute;
    std::optional<TaskId> last_pass;      // the previous pass's last compute-stream task
    std::optional<TaskId> overlapped_tp;  // and its overlapped TP collective, if any
    // At layer granularity: an overlapped TP collective that the next compute task waits
    // for, and the last task pass_tasks put on the compute stream.
    std::optional<TaskId> pending_tp;
    std::optional<TaskId> compute_tail;
    double in_flight = 0;
    double peak_activations = 0;
    // Buffers: the next id, and the activations each forward step keeps, by step id.
    uint32_t next_buffer = 1;
    std::map<std::string, uint32_t> kept;
    // Activation offload: each forward step's copy to host memory, by step id, and the
    // latest one, which the next pass waits for.
    std::map<std::string, TaskId> offloaded;
    std::optional<TaskId> offload_in_flight;
    // The micro-batch whose forward or backward is being emitted: its compute tasks' ops
    // bind that micro-batch's activations.
    uint32_t micro_batch = kNoMicroBatch;
  };

  RankContext context_of(int rank);
  // The rank's chunks, parameters and classifier share; fills the role's layer counts.
  void price_chunks(RankContext& rc, RankRole& role);
  // Model states and communication buffers, allocated before the first step.
  double allocate_states(RankContext& rc, RankRole& role);
  // What NCCL's buffers on the rank depend on: its communicators and pipeline peers.
  NcclRankView nccl_view(const RankContext& rc);
  struct NodeNics {
    int count = 0;
    Bandwidth bandwidth;  // of one NIC
  };
  // The NICs of a node (found once, from the topology's network links).
  const NodeNics& node_nics(int node);
  void emit_forward(RankContext& rc, const PipeStep& st, int index);
  void emit_backward(RankContext& rc, const PipeStep& st, int index, bool last_of_chunk);
  // The last micro-batch's backward, cut at gradient-bucket boundaries.
  // With `reloaded`, layers [0, split) wait for their offloaded activations' copy.
  TaskId emit_bucketed_backward(RankContext& rc, const ChunkCost& cc, int chunk,
                                const std::string& id, std::vector<TaskId> deps, int split = 0,
                                std::optional<TaskId> reloaded = std::nullopt);
  // After the last backward: shared-embedding and expert gradients, the optimizer step and
  // the parameter gathers or averages that follow it.
  void emit_step_end(RankContext& rc);
  // "mb3", or "mb3.c1" when stages hold several chunks: names the step's tasks.
  std::string step_id(const PipeStep& st) const {
    return "mb" + std::to_string(st.micro_batch) + (rp_.v > 1 ? ".c" + std::to_string(st.chunk) : "");
  }
  // Activation bytes one micro-batch of a chunk keeps.
  static double kept_activations(const RankContext& rc, const ChunkCost& cc) {
    return cc.activation_bytes + (rc.classifier ? rc.classifier->activation_bytes : 0);
  }

  const ChunkCost& cost(const RankContext& rc, int chunk_index, int begin, int end);
  // A compute task's kernels as one op list of the graph, with their time and tally.
  struct TaskOps {
    OpListId id = kNoOps;
    Duration time;
    CostTally tally;
  };
  TaskOps add_ops(const PricedOps& ops);
  // The kernels of layers [first, last) of a chunk's forward or backward pass, in the order
  // the pass runs them (the backward from the last layer down).
  const TaskOps& pass_ops(const ChunkCost& cc, bool forward, int first, int last);
  const TaskOps& whole_pass(const ChunkCost& cc, bool forward) {
    return pass_ops(cc, forward, 0, static_cast<int>(cc.layer_fwd.size()));
  }
  // One kernel of `op` on the rank's device, `times` over.
  const TaskOps& kernel_ops(const RankContext& rc, const OpSignature& op, int times = 1);
  // Part of a pass at layer granularity: kernels (none when two collectives meet) and the
  // collectives that follow them.
  struct PassSegment {
    TaskOps ops;
    int layer = 0;  // of the chunk, where the kernels start
    std::vector<PassComm> comms;
  };
  const std::vector<PassSegment>& pass_segments(const ChunkCost& cc, bool forward, int first,
                                                int last);
  // The kernels of layers [first, last) of a chunk's pass, after `deps`, as compute tasks
  // named after `name`: one at chunk granularity (model_parallel_comms adds the
  // collectives after the pass); at layer granularity one between each two of the pass's
  // collectives, which it adds. Returns the last task on the compute stream.
  TaskId pass_tasks(RankContext& rc, const ChunkCost& cc, bool forward, int first, int last,
                    const std::string& name, const std::string& id, std::vector<TaskId> deps);
  bool layer_granularity() const { return in_.granularity == Granularity::kLayer; }
  TaskId compute(const RankContext& rc, std::string name, const TaskOps& ops,
                 std::vector<TaskId> deps = {}, std::optional<uint16_t> stream = std::nullopt);
  // An allocation of `bytes` that holds `category`; returns its buffer, which the free
  // names.
  uint32_t alloc(RankContext& rc, std::string name, double bytes, MemoryCategory category);
  void free(RankContext& rc, std::string name, uint32_t buffer, double bytes,
            MemoryCategory category, std::optional<uint16_t> stream = {},
            std::vector<TaskId> deps = {});
  // On the compute stream, or on `stream` after `deps`.
  TaskId memory_task(const RankContext& rc, TaskKind kind, std::string name, uint32_t buffer,
                     double bytes, MemoryCategory category, std::optional<uint16_t> stream = {},
                     std::vector<TaskId> deps = {});
  // Activation offload of a forward step's first layers (made by `made_by`), and their
  // reload for its backward step (which waits for `copy` before those layers).
  void start_offload(RankContext& rc, const std::string& id, double bytes, TaskId made_by);
  struct Reload {
    uint32_t buffer = 0;
    TaskId copy = 0;
  };
  Reload start_reload(RankContext& rc, const std::string& id, double bytes,
                      const std::vector<TaskId>& inputs);
  // A copy of `bytes` between the rank's device and its host's memory, on `stream`.
  TaskId host_copy(const RankContext& rc, std::string name, uint16_t stream, MemcpyKind kind,
                   double bytes, std::vector<TaskId> deps);
  // A collective task of `rank` on `stream`; nothing when the group is one rank or empty.
  std::optional<TaskId> collective(RankContext& rc, GroupKind kind, const std::vector<int>& group,
                                   uint16_t stream, CollectiveOp op, double bytes,
                                   std::string label, std::vector<TaskId> deps = {},
                                   CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto,
                                   bool analytical = false, int calls = 1);
  // One tensor-parallel exchange of `bytes` (tp_exchange_ops: an all-reduce, or a
  // reduce-scatter and an all-gather), standing for `calls` exchanges of bytes / calls; the
  // first call waits for `deps`. Returns the last call.
  std::optional<TaskId> tp_exchange(RankContext& rc, double bytes, const std::string& label,
                                    std::vector<TaskId> deps, int calls = 1);
  // A pipeline send or recv of `transfer`, tagged by it.
  TaskId p2p(const RankContext& rc, bool send, int peer, uint16_t stream, PipelineTransfer transfer,
             double bytes, std::string name, std::vector<TaskId> deps = {});
  // A pass over a chunk under ZeRO-3 (FSDP): layer by layer, each layer's parameters
  // gathered two layers ahead of use and, after its backward, its gradients scattered.
  // Returns the last compute task.
  TaskId zero3_pass(RankContext& rc, const ChunkCost& cc, bool forward, const std::string& id,
                    std::vector<TaskId> deps);
  // After a gather into a list of per-rank tensors, the copy kernels that fill them (one per
  // rank of the group, each of its share of `bytes`), on `stream` after `after`.
  TaskId rank_copies(const RankContext& rc, uint16_t stream, double bytes,
                     const std::string& gather, TaskId after);
  // Under per-parameter ZeRO-3 gathers, whether a tensor of `params` (a rank's share) is
  // below the persistence threshold: kept whole on every rank, never gathered.
  bool kept_whole(double params) const {
    return params < static_cast<double>(in_.plan.persistence_threshold);
  }
  // The collectives that follow a pass's kernels (`pass`, whose inputs were `inputs`): the
  // chunk's tensor-parallel all-reduces, the MoE all-to-alls and, after a backward pass,
  // the context-parallel scatter of key/value gradients. On the compute stream, except for
  // overlapped tensor-parallel collectives, which start with the pass's inputs on their own
  // stream.
  PassEnd model_parallel_comms(RankContext& rc, const ChunkCost& cc, bool forward,
                               const std::string& id, TaskId pass,
                               const std::vector<TaskId>& inputs);
  // Adds to a pass's `deps` the previous pass's overlapped collective; returns what the
  // pass's own overlapped collective waits for.
  std::vector<TaskId> pass_inputs(RankContext& rc, std::vector<TaskId>& deps) const;
  // Rank holding virtual stage k with the same dp, tp and cp coordinates.
  int rank_of_virtual_stage(const RankContext& rc, int k) const;
  // `group` without the members outside `rank`'s region when `local`.
  std::vector<int> group_in_region(std::vector<int> group, int rank, bool local) const;
  // The group of `kind` whose first member is `leader` (and `variant`: a region's part of
  // it, say), made by `build()` the first time a member asks.
  template <typename Build>
  GroupRef shared_group(GroupKind kind, int leader, int variant, Build build) {
    const uint64_t key = (static_cast<uint64_t>(kind) << 56) |
                         (static_cast<uint64_t>(variant) << 32) | static_cast<uint32_t>(leader);
    auto it = groups_.find(key);
    if (it == groups_.end()) it = groups_.emplace(key, build()).first;
    return GroupRef(it->second);
  }
  // Once per group (its members all ask): the cross-region algorithm or kAuto.
  CollectiveAlgorithm dp_algorithm(const std::vector<int>& group);
  // A PlanError at parallelism.dp_algorithm when the algorithm the scenario names does not
  // apply to `op` over `group` (once per group and operation).
  void check_dp_algorithm(GroupKind kind, CollectiveOp op, const std::vector<int>& group,
                          const CollectiveOptions& options);
  bool inside_one_node(const std::vector<int>& group) const;

  const LoweringInput& in_;
  const ResolvedPlan& rp_;
  LoweredStep& out_;
  TaskGraph& g_;
  Streams s_{};
  PerParameterBytes per_parameter_bytes_;
  CallBook book_;
  std::map<std::tuple<const DeviceSpec*, int64_t, int, int>, ChunkCost> costs_;
  std::map<std::tuple<const ChunkCost*, bool, int, int>, TaskOps> pass_ops_;
  std::map<std::tuple<const ChunkCost*, bool, int, int>, std::vector<PassSegment>> segments_;
  // A deque: kernel_ops hands out references that later additions must not move.
  std::map<std::pair<const DeviceSpec*, int>, std::deque<std::pair<OpSignature, TaskOps>>>
      kernel_ops_;
  std::map<int64_t, Workload> classifier_workloads_;
  std::set<std::tuple<GroupKind, int, CollectiveOp>> checked_dp_groups_;
  std::vector<NodeNics> node_nics_;
  // Every rank group, by kind, first member and variant (shared_group); unordered_map keeps
  // its elements in place, so that GroupRefs stay valid.
  std::unordered_map<uint64_t, std::vector<int>> groups_;
  std::unordered_map<const std::vector<int>*, CollectiveAlgorithm> dp_algorithms_;
  // NCCL's view of a communicator from a node: what its members there hold.
  std::map<std::pair<const std::vector<int>*, int>, NcclCommunicatorView> communicators_;
};

const ChunkCost& StepEmitter::cost(const RankContext& rc, int chunk_index, int begin, int end) {
  auto key = std::tuple{rc.device, rc.w->shape.micro_batch, rc.c.tp, chunk_index};
  auto it = costs_.find(key);
  if (it == costs_.end()) {
    it = costs_.emplace(key, chunk_cost(*rc.w, begin, end, rc.shard, in_.training.recompute_policy(),
                                        *rc.device, *in_.costs))
             .first;
  }
  return it->second;
}

StepEmitter::TaskOps StepEmitter::add_ops(const PricedOps& ops) {
  std::vector<OpSignature> signatures;
  std::vector<OpOperands> operands;
  signatures.reserve(ops.size());
  operands.reserve(ops.size());
  for (const PricedOp& p : ops) {
    signatures.push_back(p.op);
    operands.push_back(p.operands);
  }
  return TaskOps{g_.add_op_list(signatures, operands), total_time(ops), tally_of(ops)};
}

const StepEmitter::TaskOps& StepEmitter::pass_ops(const ChunkCost& cc, bool forward, int first,
                                                  int last) {
  auto key = std::tuple{&cc, forward, first, last};
  auto it = pass_ops_.find(key);
  if (it == pass_ops_.end()) {
    PricedOps ops;
    for (int n = 0; n < last - first; ++n) {
      const int l = forward ? first + n : last - 1 - n;
      const PricedOps& layer = forward ? cc.layer_fwd_ops[l] : cc.layer_bwd_ops[l];
      ops.insert(ops.end(), layer.begin(), layer.end());
    }
    it = pass_ops_.emplace(key, add_ops(ops)).first;
  }
  return it->second;
}

const std::vector<StepEmitter::PassSegment>& StepEmitter::pass_segments(const ChunkCost& cc,
                                                                        bool forward, int first,
                                                                        int last) {
  auto key = std::tuple{&cc, forward, first, last};
  auto it = segments_.find(key);
  if (it != segments_.end()) return it->second;
  // Collectives over a group of one rank are not made: their cuts are not either.
  const auto made = [&](PassComm::Kind kind) {
    switch (kind) {
      case PassComm::Kind::kTp:
        return rp_.tp > 1;
      case PassComm::Kind::kEp:
        return rp_.ep > 1;
      case PassComm::Kind::kCp:
        return rp_.cp > 1;
      case PassComm::Kind::kEtpGather:
      case PassComm::Kind::kEtpScatter:
        return rp_.etp > 1;
    }
    return false;
  };
  std::vector<PassSegment> segments;
  PricedOps kernels;
  PassSegment open;  // its layer is set where its first kernel or call is
  const auto close = [&](int next_layer) {
    if (!kernels.empty()) open.ops = add_ops(kernels);
    if (!kernels.empty() || !open.comms.empty()) segments.push_back(std::move(open));
    kernels.clear();
    open = PassSegment{TaskOps{}, next_layer, {}};
  };
  for (int n = 0; n < last - first; ++n) {
    const int l = forward ? first + n : last - 1 - n;
    const PricedOps& layer = forward ? cc.layer_fwd_ops[l] : cc.layer_bwd_ops[l];
    const std::vector<PassComm>& comms = forward ? cc.layer_fwd_comms[l] : cc.layer_bwd_comms[l];
    if (kernels.empty() && open.comms.empty()) open.layer = l;
    size_t next = 0;
    for (const PassComm& comm : comms) {
      if (!made(comm.kind) || comm.bytes <= 0) continue;
      if (!open.comms.empty() && static_cast<int>(next) < comm.after) close(l);
      kernels.insert(kernels.end(), layer.begin() + static_cast<ptrdiff_t>(next),
                     layer.begin() + comm.after);
      next = static_cast<size_t>(comm.after);
      open.comms.push_back(comm);
    }
    if (next < layer.size()) {
      if (!open.comms.empty()) close(l);
      kernels.insert(kernels.end(), layer.begin() + static_cast<ptrdiff_t>(next), layer.end());
    }
  }
  close(0);
  return segments_.emplace(key, std::move(segments)).first->second;
}

TaskId StepEmitter::pass_tasks(RankContext& rc, const ChunkCost& cc, bool forward, int first,
                               int last, const std::string& name, const std::string& id,
                               std::vector<TaskId> deps) {
  if (!layer_granularity()) return compute(rc, name, pass_ops(cc, forward, first, last), deps);
  const bool overlap = in_.plan.tp_comm_overlap;
  const std::string pass = forward ? " fwd " : " bwd ";
  std::optional<TaskId> tail;
  std::map<int, int> starts;  // segments begun in each layer, to name them apart
  std::map<int, int> calls;   // collectives made in each layer
  for (const PassSegment& seg : pass_segments(cc, forward, first, last)) {
    // What the segment's overlapped collective may start with: the segment's inputs and
    // what the compute stream ran before it.
    std::vector<TaskId> inputs = deps;
    if (rc.pending_tp) {
      deps.push_back(*rc.pending_tp);
      inputs.push_back(*rc.pending_tp);
      rc.pending_tp.reset();
    }
    if (rc.compute_tail) inputs.push_back(*rc.compute_tail);
    if (seg.ops.id != kNoOps) {
      const int k = starts[seg.layer]++;
      tail = compute(
          rc, name + " l" + std::to_string(seg.layer) + (k > 0 ? "." + std::to_string(k) : ""),
          seg.ops, std::move(deps));
      deps.clear();
      rc.compute_tail = tail;
    }
    for (const PassComm& comm : seg.comms) {
      const std::string at =
          id + " l" + std::to_string(seg.layer) + "." + std::to_string(calls[seg.layer]++);
      // Only a collective that opens the pass waits for its inputs itself; later ones
      // follow the compute stream.
      std::vector<TaskId> after = std::move(deps);
      deps.clear();
      std::optional<TaskId> t;
      switch (comm.kind) {
        case PassComm::Kind::kTp:
          t = tp_exchange(rc, comm.bytes, "tp" + pass + at, overlap ? inputs : after);
          if (t && overlap) {
            rc.pending_tp = t;
            t.reset();
          }
          break;
        case PassComm::Kind::kEp:
          t = collective(rc, GroupKind::kEp, rc.ep_group, s_.compute, CollectiveOp::kAllToAll,
                         comm.bytes, "ep all-to-all" + pass + at, after);
          break;
        case PassComm::Kind::kEtpGather:
        case PassComm::Kind::kEtpScatter:
          t = collective(
              rc, GroupKind::kExpertTp, rc.etp_group, s_.compute,
              comm.kind == PassComm::Kind::kEtpGather ? CollectiveOp::kAllGather
                                                      : CollectiveOp::kReduceScatter,
              comm.bytes,
              (comm.kind == PassComm::Kind::kEtpGather ? "etp gather" : "etp scatter") + pass + at,
              after);
          break;
        case PassComm::Kind::kCp:
          t = forward || comm.recomputed
                  ? collective(rc, GroupKind::kCp, rc.cp_group, s_.compute,
                               CollectiveOp::kAllGather, comm.bytes, "cp kv gather " + at, after)
                  : collective(rc, GroupKind::kCp, rc.cp_group, s_.compute,
                               CollectiveOp::kReduceScatter, comm.bytes, "cp kv grad scatter " + at,
                               after);
          break;
      }
      if (t) {
        tail = t;
        rc.compute_tail = t;
      }
    }
  }
  DTSIM_CHECK(tail.has_value(), "a pass without kernels");
  return *tail;
}

const StepEmitter::TaskOps& StepEmitter::kernel_ops(const RankContext& rc, const OpSignature& op,
                                                    int times) {
  auto& known = kernel_ops_[{rc.device, times}];
  for (const auto& [signature, ops] : known) {
    if (signature == op) return ops;
  }
  PricedOp priced = price_op(op, *rc.device, *in_.costs);
  if (op.kind == KernelKind::kOptimizerUpdate) priced.operands = optimizer_operands();
  const PricedOps ops(static_cast<size_t>(times), priced);
  known.emplace_back(op, add_ops(ops));
  return known.back().second;
}

TaskId StepEmitter::compute(const RankContext& rc, std::string name, const TaskOps& ops,
                            std::vector<TaskId> deps, std::optional<uint16_t> stream) {
  Task t;
  t.kind = TaskKind::kCompute;
  t.rank = rc.rank;
  t.stream = stream.value_or(s_.compute);
  t.name = std::move(name);
  t.duration = ops.time;
  t.ops = ops.id;
  t.tag = rc.micro_batch;
  t.deps = std::move(deps);
  out_.costs.add(ops.tally);
  return g_.add(std::move(t));
}

uint32_t StepEmitter::alloc(RankContext& rc, std::string name, double bytes,
                            MemoryCategory category) {
  const uint32_t buffer = rc.next_buffer++;
  memory_task(rc, TaskKind::kAlloc, std::move(name), buffer, bytes, category);
  return buffer;
}

void StepEmitter::free(RankContext& rc, std::string name, uint32_t buffer, double bytes,
                       MemoryCategory category, std::optional<uint16_t> stream,
                       std::vector<TaskId> deps) {
  memory_task(rc, TaskKind::kFree, std::move(name), buffer, bytes, category, stream,
              std::move(deps));
}

TaskId StepEmitter::memory_task(const RankContext& rc, TaskKind kind, std::string name,
                                uint32_t buffer, double bytes, MemoryCategory category,
                                std::optional<uint16_t> stream, std::vector<TaskId> deps) {
  Task t;
  t.kind = kind;
  t.rank = rc.rank;
  t.stream = stream.value_or(s_.compute);
  t.name = std::move(name);
  t.bytes = bytes_of(bytes);
  t.memory = category;
  t.buffer = buffer;
  t.deps = std::move(deps);
  return g_.add(std::move(t));
}

TaskId StepEmitter::host_copy(const RankContext& rc, std::string name, uint16_t stream,
                              MemcpyKind kind, double bytes, std::vector<TaskId> deps) {
  Task t;
  t.kind = TaskKind::kMemcpy;
  t.memcpy_kind = kind;
  t.rank = rc.rank;
  t.stream = stream;
  t.name = std::move(name);
  t.bytes = bytes_of(bytes);
  t.deps = std::move(deps);
  return g_.add(std::move(t));
}

std::optional<TaskId> StepEmitter::collective(RankContext& rc, GroupKind kind,
                                              const std::vector<int>& group, uint16_t stream,
                                              CollectiveOp op, double bytes, std::string label,
                                              std::vector<TaskId> deps,
                                              CollectiveAlgorithm algorithm, bool analytical,
                                              int calls) {
  if (group.size() <= 1 || bytes <= 0) return std::nullopt;
  const bool data_parallel =
      kind == GroupKind::kDp || kind == GroupKind::kExpertDp || kind == GroupKind::kGeo;
  if (data_parallel && in_.plan.dp_algorithm != CollectiveAlgorithm::kAuto)
    check_dp_algorithm(kind, op, group, CollectiveOptions{});
  const auto proto = [&] {
    CollectiveCall call;
    call.op = op;
    call.algorithm = algorithm;
    call.members = group;
    call.bytes = bytes_of(bytes);
    call.label = label;
    call.analytical = analytical;
    call.calls = std::max(1, calls);
    // Activations, weights and gradients travel in their stored type; the softmax's maxima
    // and sums of the sharded classifier in fp32. Data-parallel groups average gradients
    // (and local SGD's regions their parameters); model-parallel groups sum partial results.
    const bool softmax = kind == GroupKind::kWorld && op == CollectiveOp::kAllReduce;
    call.dtype = softmax ? DType::kFp32 : stored_dtype(in_.training.precision);
    call.reduce = softmax ? ReduceOp::kMax : data_parallel ? ReduceOp::kAvg : ReduceOp::kSum;
    return call;
  };
  Task t;
  t.kind = TaskKind::kCollective;
  t.rank = rc.rank;
  t.stream = stream;
  t.name = label;
  t.deps = std::move(deps);
  t.collective = book_.next(g_, kind, group, rc.rank, proto);
  const TaskId id = g_.add(std::move(t));
  if (stream == s_.dp) {
    rc.last_dp = id;
    rc.has_dp = true;
  }
  return id;
}

std::optional<TaskId> StepEmitter::tp_exchange(RankContext& rc, double bytes,
                                               const std::string& label, std::vector<TaskId> deps,
                                               int calls) {
  const std::vector<CollectiveOp> ops = tp_exchange_ops(in_.plan.sequence_parallel);
  std::optional<TaskId> last;
  for (CollectiveOp op : ops) {
    // Later calls follow the first on the TP stream.
    const std::string name =
        ops.size() > 1 ? label + " " + std::string(collective_op_name(op)) : label;
    if (auto t = collective(rc, GroupKind::kTp, rc.tp_group, s_.tp, op, bytes, name,
                            std::exchange(deps, {}), CollectiveAlgorithm::kAuto, rc.tp_analytical,
                            calls)) {
      last = t;
    }
  }
  return last;
}

// Pipeline messages are tagged by what they move: the micro-batch, and the virtual stage
// whose output (or its gradient) crosses to the next, so sender and receiver agree.
uint32_t tag_of(const PipelineTransfer& t, int chunks_total) {
  return (t.micro_batch * static_cast<uint32_t>(chunks_total) + t.chunk) * 2 +
         (t.tensor == PipelineTensor::kActivations ? 0 : 1);
}

PipelineTransfer activations_of(int micro_batch, int chunk) {
  return {PipelineTensor::kActivations, static_cast<uint32_t>(micro_batch),
          static_cast<uint32_t>(chunk)};
}

PipelineTransfer gradients_of(int micro_batch, int chunk) {
  return {PipelineTensor::kActivationGradients, static_cast<uint32_t>(micro_batch),
          static_cast<uint32_t>(chunk)};
}

TaskId StepEmitter::p2p(const RankContext& rc, bool send, int peer, uint16_t stream,
                        PipelineTransfer transfer, double bytes, std::string name,
                        std::vector<TaskId> deps) {
  Task t;
  t.kind = send ? TaskKind::kSend : TaskKind::kRecv;
  t.rank = rc.rank;
  t.stream = stream;
  t.name = std::move(name);
  t.peer = peer;
  t.tag = tag_of(transfer, rp_.pp * rp_.v);
  t.transfer = transfer;
  t.bytes = bytes_of(bytes);
  t.deps = std::move(deps);
  return g_.add(std::move(t));
}

PassEnd StepEmitter::model_parallel_comms(RankContext& rc, const ChunkCost& cc, bool forward,
                                          const std::string& id, TaskId pass,
                                          const std::vector<TaskId>& inputs) {
  PassEnd end{pass, std::nullopt};
  if (layer_granularity()) {
    // pass_tasks made them inside the pass; a last overlapped one ends it.
    end.overlapped_tp = rc.pending_tp;
    rc.pending_tp.reset();
    return end;
  }
  const std::string kind = forward ? " fwd " : " bwd ";
  const bool overlap = in_.plan.tp_comm_overlap;
  const auto tp = tp_exchange(rc, forward ? cc.tp_bytes_fwd : cc.tp_bytes_bwd, "tp" + kind + id,
                              overlap ? inputs : std::vector<TaskId>{},
                              forward ? cc.tp_calls_fwd : cc.tp_calls_bwd);
  if (tp && overlap) {
    end.overlapped_tp = *tp;
  } else if (tp) {
    end.last = *tp;
  }
  // The expert layers' dispatch and combine: all-to-alls, and the expert-tensor-parallel
  // gathers and scatters between them and the experts.
  for (const auto& t :
       {collective(rc, GroupKind::kEp, rc.ep_group, s_.compute, CollectiveOp::kAllToAll,
                   forward ? cc.all_to_all_bytes : cc.all_to_all_bytes_bwd,
                   "ep all-to-all" + kind + id),
        collective(rc, GroupKind::kExpertTp, rc.etp_group, s_.compute, CollectiveOp::kAllGather,
                   forward ? cc.etp_gather_bytes_fwd : cc.etp_gather_bytes_bwd,
                   "etp gather" + kind + id),
        collective(rc, GroupKind::kExpertTp, rc.etp_group, s_.compute, CollectiveOp::kReduceScatter,
                   forward ? cc.etp_scatter_bytes_fwd : cc.etp_scatter_bytes_bwd,
                   "etp scatter" + kind + id),
        forward ? std::nullopt
                : collective(rc, GroupKind::kCp, rc.cp_group, s_.compute, CollectiveOp::kAllGather,
                             cc.kv_bytes_rerun, "cp kv gather bwd " + id),
        forward
            ? std::nullopt
            : collective(rc, GroupKind::kCp, rc.cp_group, s_.compute, CollectiveOp::kReduceScatter,
                         cc.kv_bytes, "cp kv grad scatter " + id)}) {
    if (t) end.last = *t;
  }
  return end;
}

TaskId StepEmitter::zero3_pass(RankContext& rc, const ChunkCost& cc, bool forward,
                               const std::string& id, std::vector<TaskId> deps) {
  const ParallelPlan& plan = in_.plan;
  const int layers = static_cast<int>(cc.layer_fwd.size());
  // Without prefetch the collectives queue on the compute stream behind the kernels.
  const bool prefetch = plan.overlap_param_gather;
  const uint16_t stream = prefetch ? s_.dp : s_.compute;
  const CollectiveOp grad_op =
      plan.grad_all_reduce ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter;
  std::vector<TaskId> done;
  for (int n = 0; n < layers; ++n) {
    const int l = forward ? n : layers - 1 - n;
    const std::string layer = std::string(forward ? " fwd " : " bwd ") + id + " l" + std::to_string(l);
    std::vector<TaskId> window;
    if (prefetch && n >= 2) window.push_back(done[n - 2]);
    std::vector<TaskId> needs = n == 0 ? deps : std::vector<TaskId>{};
    // The layer's dense parameters in one flat gather, or one gather per tensor of at
    // least the persistence threshold (smaller ones are kept whole, never gathered).
    std::vector<double> gathers{cc.layer_dense_params[l]};
    if (plan.per_parameter_gather) {
      gathers.clear();
      for (double t : cc.layer_dense_tensors[l]) {
        if (!kept_whole(t)) gathers.push_back(t);
      }
    }
    for (size_t g = 0; g < gathers.size(); ++g) {
      const std::string name =
          "zero3 gather" + layer + (gathers.size() > 1 ? "." + std::to_string(g) : "");
      const double bytes = gathers[g] * per_parameter_bytes_.weights;
      const auto t = collective(rc, GroupKind::kDp, rc.dp_group, stream, CollectiveOp::kAllGather,
                                bytes, name, window);
      if (!t) continue;
      needs.push_back(*t);
      if (plan.gather_copies_per_rank) needs.push_back(rank_copies(rc, stream, bytes, name, *t));
    }
    if (const auto t =
            collective(rc, GroupKind::kExpertDp, rc.edp_group, stream, CollectiveOp::kAllGather,
                       cc.layer_expert_params[l] * per_parameter_bytes_.weights,
                       "zero3 expert gather" + layer, window)) {
      needs.push_back(*t);
    }
    done.push_back(pass_tasks(
        rc, cc, forward, l, l + 1,
        (forward ? "fwd " : "bwd ") + id + (layer_granularity() ? "" : " l" + std::to_string(l)),
        id, needs));
    if (!forward) {
      collective(rc, GroupKind::kDp, rc.dp_group, stream, grad_op,
                 cc.layer_dense_params[l] * per_parameter_bytes_.gradients,
                 (plan.grad_all_reduce ? "zero3 grad all-reduce" : "zero3 grad scatter") + layer,
                 {done.back()}, dp_algorithm(rc.dp_group));
      collective(
          rc, GroupKind::kExpertDp, rc.edp_group, stream, grad_op,
          cc.layer_expert_params[l] * per_parameter_bytes_.gradients,
          (plan.grad_all_reduce ? "zero3 expert grad all-reduce" : "zero3 expert grad scatter") +
              layer,
          {done.back()}, dp_algorithm(rc.edp_group));
    }
  }
  return done.back();
}

TaskId StepEmitter::rank_copies(const RankContext& rc, uint16_t stream, double bytes,
                                const std::string& gather, TaskId after) {
  const int ranks = static_cast<int>(rc.dp_group.size());
  OpSignature one;  // one rank's share, read and written
  one.name = "gather copy";
  one.kind = KernelKind::kCopy;
  one.storage = stored_dtype(in_.training.precision);
  one.bytes = 2 * bytes / ranks;
  return compute(rc, gather + " copies", kernel_ops(rc, one, ranks), {after}, stream);
}

int StepEmitter::rank_of_virtual_stage(const RankContext& rc, int k) const {
  RankCoords c = rc.c;
  c.pp = k % rp_.pp;
  return rp_.placement->rank(c);
}

std::vector<int> StepEmitter::group_in_region(std::vector<int> group, int rank, bool local) const {
  if (!local) return group;
  const int region = in_.cluster->devices[rank].region;
  std::erase_if(group, [&](int r) { return in_.cluster->devices[r].region != region; });
  return group;
}

void StepEmitter::check_dp_algorithm(GroupKind kind, CollectiveOp op, const std::vector<int>& group,
                                     const CollectiveOptions& options) {
  if (!checked_dp_groups_.emplace(kind, group.front(), op).second) return;
  const std::string error =
      applicability_error(op, in_.plan.dp_algorithm, group_layout(*in_.cluster, group), options);
  if (error.empty()) return;
  throw PlanError(
      {problem_at("parallelism.dp_algorithm",
                  error + " (for the data-parallel " + std::string(collective_op_name(op)) +
                      " over " + std::to_string(group.size()) + " ranks from rank " +
                      std::to_string(group.front()) + ")")});
}

bool StepEmitter::inside_one_node(const std::vector<int>& group) const {
  for (int r : group) {
    if (in_.cluster->devices[r].node != in_.cluster->devices[group.front()].node) return false;
  }
  return true;
}

CollectiveAlgorithm StepEmitter::dp_algorithm(const std::vector<int>& group) {
  if (in_.plan.dp_algorithm != CollectiveAlgorithm::kAuto) return in_.plan.dp_algorithm;
  if (group.empty()) return CollectiveAlgorithm::kAuto;  // a dense model's expert groups
  if (const auto it = dp_algorithms_.find(&group); it != dp_algorithms_.end()) return it->second;
  const auto region_of = [&](int r) { return in_.cluster->devices[r].region; };
  const int first = region_of(group.front());
  if (std::all_of(group.begin(), group.end(), [&](int r) { return region_of(r) == first; })) {
    dp_algorithms_.emplace(&group, CollectiveAlgorithm::kAuto);
    return CollectiveAlgorithm::kAuto;
  }
  // Across regions, the cross-region algorithm where the planner takes it (as many members
  // in every region, for each op it implements); an uneven group (2 ranks east, 1 west) is
  // left to the simulation's choice among the flat algorithms, as NCCL would ring the WAN.
  const bool applies =
      applicability_error(CollectiveOp::kAllReduce, CollectiveAlgorithm::kCrossRegion,
                          group_layout(*in_.cluster, group), {})
          .empty();
  const CollectiveAlgorithm a = applies ? CollectiveAlgorithm::kCrossRegion : CollectiveAlgorithm::kAuto;
  dp_algorithms_.emplace(&group, a);
  return a;
}

StepEmitter::RankContext StepEmitter::context_of(int rank) {
  const ParallelPlan& plan = in_.plan;
  const Placement& pl = *rp_.placement;
  RankContext rc;
  rc.rank = rank;
  rc.c = pl.coords(rank);
  rc.device = in_.cluster->devices[rank].spec;
  rc.w = &rp_.workloads.at(rp_.replica_micro_batch[rc.c.dp]);
  rc.shard = rank_shard(in_, rp_, rc.c);
  // Local SGD steps reduce gradients inside each region; the sync step averages across.
  const bool local = plan.sync_every > 1;
  using enum ParallelAxis;
  // A region's part of a group is named by the region too.
  const int region = local ? in_.cluster->devices[rank].region + 1 : 0;
  rc.tp_group = shared_group(GroupKind::kTp, pl.leader({kTp}, rc.c), 0,
                             [&] { return pl.group(kTp, rc.c); });
  rc.cp_group = shared_group(GroupKind::kCp, pl.leader({kCp}, rc.c), 0,
                             [&] { return pl.group(kCp, rc.c); });
  rc.dp_group = shared_group(GroupKind::kDp, pl.leader({kDp, kCp}, rc.c), region, [&] {
    return group_in_region(pl.group({kDp, kCp}, rc.c), rank, local);
  });
  if (local && in_.global_sync) {
    rc.geo_group = shared_group(GroupKind::kGeo, pl.leader({kDp, kCp}, rc.c), 0,
                                [&] { return pl.group({kDp, kCp}, rc.c); });
  }
  // Only a model with experts has expert groups: a dense model's expert-data-parallel
  // group would be a second data-parallel group per rank, built for nothing.
  if (in_.model.family == ModelFamily::kMoe) {
    // The expert and expert-tensor groups are small: built, then shared under their first.
    Placement::ExpertGroups experts = pl.expert_groups(rc.c, rp_.etp, rp_.ep);
    rc.ep_group = shared_group(GroupKind::kEp, experts.expert.front(), 0,
                               [&] { return std::move(experts.expert); });
    rc.etp_group = shared_group(GroupKind::kExpertTp, experts.tensor.front(), 0,
                                [&] { return std::move(experts.tensor); });
    rc.edp_group =
        shared_group(GroupKind::kExpertDp, pl.expert_data_leader(rc.c, rp_.etp, rp_.ep), region,
                     [&] { return group_in_region(pl.expert_data_group(rc.c, rp_.etp, rp_.ep),
                                                  rank, local); });
  }
  const int zero = plan.zero_stage;
  rc.bucketed = rc.dp_group.size() > 1 && zero < 3;
  rc.grad_op = zero == 0 ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter;
  rc.grad_algorithm = dp_algorithm(rc.dp_group);
  rc.tp_analytical = plan.tp_comm_analytical && inside_one_node(rc.tp_group);
  return rc;
}

void StepEmitter::price_chunks(RankContext& rc, RankRole& role) {
  const int pp = rp_.pp;
  int cls_begin = static_cast<int>(rc.w->layers.size());
  if (in_.plan.shard_classifier) {
    for (int i = 0; i < static_cast<int>(rc.w->layers.size()); ++i) {
      if (rc.w->layers[i].kind == LayerKind::kClassifier) {
        cls_begin = i;
        break;
      }
    }
  }
  for (int c = 0; c < rp_.v; ++c) {
    const LayerRange r = rp_.chunks[c * pp + rc.c.pp];
    const int end = std::min(r.end, cls_begin);
    rc.chunks.push_back(&cost(rc, c * pp + rc.c.pp, r.begin, end));
    rc.dense += rc.chunks.back()->dense_params;
    rc.expert += rc.chunks.back()->expert_params;
    if (c == 0) role.first_layer = r.begin;
    role.layers += end - r.begin;
  }
  // Tied word embeddings over a pipeline: Megatron-LM keeps a copy of the table on the last
  // stage for the logits and all-reduces the two copies' gradients every step.
  if (in_.model.tied_embeddings && is_transformer(in_.model.family) && pp > 1 &&
      (rc.c.pp == 0 || rc.c.pp == pp - 1)) {
    rc.tied_table = static_cast<double>(in_.model.vocab) * in_.model.hidden * rc.shard.tp_share;
    if (rc.c.pp == pp - 1) rc.dense += rc.tied_table;
  }
  if (!in_.plan.shard_classifier) return;
  // The sharded classifier: one micro-batch round of every replica, split over all ranks.
  int64_t round = 0;
  for (int64_t x : rp_.replica_micro_batch) round += x;
  auto [it, fresh] = classifier_workloads_.try_emplace(round);
  if (fresh) {
    it->second = build_workload(in_.model, WorkloadShape{round, in_.training.seq_len,
                                                         in_.training.precision,
                                                         in_.training.flash_attention});
  }
  const Workload& wc = it->second;
  const RankShard all{rp_.ranks, 1.0 / rp_.ranks, false, 1, 1};
  auto key = std::tuple{rc.device, -round, 0, -1};
  auto cit = costs_.find(key);
  if (cit == costs_.end()) {
    cit = costs_.emplace(key, chunk_cost(wc, cls_begin, static_cast<int>(wc.layers.size()), all,
                                         in_.training.recompute_policy(), *rc.device, *in_.costs))
              .first;
  }
  rc.classifier = &cit->second;
  rc.classifier_features = cls_begin > 0 ? wc.layers[cls_begin - 1].output_bytes : 0;
  rc.world = shared_group(GroupKind::kWorld, 0, 0, [&] {
    std::vector<int> world(static_cast<size_t>(rp_.ranks));
    std::iota(world.begin(), world.end(), 0);
    return world;
  });
}

double StepEmitter::allocate_states(RankContext& rc, RankRole& role) {
  const int zero = in_.plan.zero_stage;
  const int dp_size = static_cast<int>(rc.dp_group.size());
  const Precision precision = in_.training.precision;
  const Optimizer optimizer = in_.training.optimizer;
  ModelStateBytes states;
  const auto add = [&](const ModelStateBytes& b) {
    states.weights += b.weights;
    states.gradients += b.gradients;
    states.optimizer += b.optimizer;
  };
  add(model_state_bytes(static_cast<int64_t>(rc.dense), precision, optimizer, zero, dp_size));
  if (rc.expert > 0) {
    add(model_state_bytes(static_cast<int64_t>(rc.expert), precision, optimizer, zero,
                          static_cast<int>(rc.edp_group.size())));
  }
  if (rc.classifier != nullptr) {
    // A sampled softmax keeps every centre and its optimizer state, and the gradients of
    // the centres it sampled.
    ModelStateBytes classifier = model_state_bytes(
        static_cast<int64_t>(rc.classifier->dense_params), precision, optimizer, 0, 1);
    classifier.gradients =
        model_state_bytes(static_cast<int64_t>(rc.classifier->dense_updated_params), precision,
                          optimizer, 0, 1)
            .gradients;
    add(classifier);
  }
  // Tensors kept whole under ZeRO-3's persistence threshold: their weights and gradients
  // on every rank, beyond the shard counted above.
  if (zero == 3 && in_.plan.per_parameter_gather && dp_size > 1) {
    double persistent = 0;
    for (const ChunkCost* cc : rc.chunks) {
      for (const std::vector<double>& tensors : cc->layer_dense_tensors) {
        for (double t : tensors) {
          if (kept_whole(t)) persistent += t;
        }
      }
    }
    const double beyond_shard = persistent * (1 - 1.0 / static_cast<double>(dp_size));
    states.weights += beyond_shard * per_parameter_bytes_.weights;
    states.gradients += beyond_shard * per_parameter_bytes_.gradients;
  }
  // Communication buffers: two gradient buckets in flight, or under ZeRO-3 the gathered
  // parameters of the layer in use and, with prefetch, the next one.
  double largest_layer = 0;
  for (const ChunkCost* cc : rc.chunks) {
    for (size_t l = 0; l < cc->layer_dense_params.size(); ++l) {
      largest_layer = std::max(largest_layer, cc->layer_dense_params[l] + cc->layer_expert_params[l]);
    }
  }
  const double buffers = dp_size <= 1 ? 0.0
                         : zero == 3  ? (in_.plan.overlap_param_gather ? 2 : 1) * largest_layer *
                                           per_parameter_bytes_.weights
                                     : 2.0 * static_cast<double>(in_.plan.bucket.count());
  alloc(rc, "weights", states.weights, MemoryCategory::kWeights);
  alloc(rc, "gradients", states.gradients, MemoryCategory::kGradients);
  if (states.optimizer > 0)
    alloc(rc, "optimizer states", states.optimizer, MemoryCategory::kOptimizerStates);
  if (buffers > 0) alloc(rc, "comm buffers", buffers, MemoryCategory::kCommBuffers);
  const double nccl = static_cast<double>(nccl_buffer_bytes(nccl_view(rc)).count());
  if (nccl > 0) alloc(rc, "nccl buffers", nccl, MemoryCategory::kCommBuffers);
  role.comm_buffer_bytes = buffers + nccl;
  return states.total();
}

NcclRankView StepEmitter::nccl_view(const RankContext& rc) {
  NcclRankView view;
  view.device = rc.device;
  const Cluster& cluster = *in_.cluster;
  const auto node_of = [&](int r) { return cluster.devices[r].node; };
  const int node = node_of(rc.rank);
  const NodeNics& nics = node_nics(node);
  const int devices = static_cast<int>(cluster.nodes[node].devices.size());
  view.nic_bandwidth = nics.bandwidth;
  view.local_nics = nics.count > 0 ? std::max(1, nics.count / std::max(1, devices)) : 0;
  const auto communicator = [&](const std::vector<int>& group) {
    NcclCommunicatorView c;
    // The whole cluster's group: no walk over its members.
    const bool everyone = group.size() == cluster.devices.size();
    int in_node = everyone ? devices : 0;
    if (!everyone) {
      for (int r : group) {
        in_node += node_of(r) == node;
        c.spans_nodes = c.spans_nodes || node_of(r) != node;
      }
    } else {
      c.spans_nodes = cluster.nodes.size() > 1;
    }
    c.alone_in_node = in_node == 1;
    // Each member's rings leave the node through its nearest NICs.
    c.nics = std::min(nics.count, in_node * std::max(1, view.local_nics));
    return c;
  };
  // Shared groups are asked once per node; the pipeline's group is the rank's own.
  const auto shared_communicator = [&](const std::vector<int>& group) {
    const auto key = std::pair{&group, node};
    auto it = communicators_.find(key);
    if (it == communicators_.end()) it = communicators_.emplace(key, communicator(group)).first;
    return it->second;
  };
  // The communicators the step's collectives use (StepEmitter::collective skips groups of
  // one rank); expert groups only where the rank holds experts. A sharded classifier's
  // gathers run over every rank: the default (world) communicator, the data-parallel one
  // when that is every rank too.
  const bool experts = rc.expert > 0;
  const bool world = rc.classifier != nullptr && rc.world.size() != rc.dp_group.size();
  for (const auto& [group, used] :
       {std::pair{&rc.tp_group, true}, std::pair{&rc.cp_group, true}, std::pair{&rc.dp_group, true},
        std::pair{&rc.ep_group, experts}, std::pair{&rc.etp_group, experts},
        std::pair{&rc.edp_group, experts}, std::pair{&rc.geo_group, true},
        std::pair{&rc.world, world}}) {
    if (used && group->size() > 1) view.collectives.push_back(shared_communicator(*group));
  }
  if (rp_.pp > 1) {
    std::vector<int> pipeline;
    for (int k = 0; k < rp_.pp; ++k) pipeline.push_back(rank_of_virtual_stage(rc, k));
    view.pipeline = communicator(pipeline);
    // Activations come from the previous stage and go to the next, their gradients the
    // other way; with interleaved stages the last stage's next is the first.
    std::set<int> peers;
    const int chunks = rp_.pp * rp_.v;
    for (int chunk = 0; chunk < rp_.v; ++chunk) {
      const int k = chunk * rp_.pp + rc.c.pp;
      if (k > 0) peers.insert(rank_of_virtual_stage(rc, k - 1));
      if (k + 1 < chunks) peers.insert(rank_of_virtual_stage(rc, k + 1));
    }
    peers.erase(rc.rank);
    for (int peer : peers) {
      ++(node_of(peer) == node ? view.pipeline_local_peers : view.pipeline_remote_peers);
    }
  }
  return view;
}

const StepEmitter::NodeNics& StepEmitter::node_nics(int node) {
  if (node_nics_.empty()) {
    const Topology& t = in_.cluster->topology;
    node_nics_.resize(in_.cluster->nodes.size());
    std::vector<char> counted(t.num_vertices(), 0);
    for (LinkId l = 0; l < t.num_links(); ++l) {
      const LinkInfo& link = t.link(l);
      const VertexInfo& from = t.vertex(link.src);
      if (from.kind != VertexKind::kNic || link.kind != LinkKind::kNetwork || from.node < 0)
        continue;
      NodeNics& n = node_nics_[static_cast<size_t>(from.node)];
      if (!counted[link.src]) {
        counted[link.src] = 1;
        ++n.count;
      }
      n.bandwidth = std::max(n.bandwidth, link.bandwidth);
    }
  }
  return node_nics_[static_cast<size_t>(node)];
}

void StepEmitter::emit_forward(RankContext& rc, const PipeStep& st, int index) {
  const int pp = rp_.pp;
  const int chunks_total = pp * rp_.v;
  const int split_act = rp_.tp * rp_.cp;  // pipeline sends carry 1/(tp*cp) of the activation
  const int k = st.chunk * pp + rc.c.pp;
  const ChunkCost& cc = *rc.chunks[st.chunk];
  const std::string id = step_id(st);
  std::vector<TaskId> deps;
  if (k > 0 && pp > 1) {
    const double bytes = rc.w->layers[rp_.chunks[k - 1].end - 1].output_bytes / split_act;
    deps.push_back(p2p(rc, false, rank_of_virtual_stage(rc, k - 1), s_.recv_prev,
                       activations_of(st.micro_batch, k - 1), bytes, "recv act " + id));
  }
  const std::vector<TaskId> tp_inputs = pass_inputs(rc, deps);
  if (!layer_granularity()) {
    collective(rc, GroupKind::kCp, rc.cp_group, s_.compute, CollectiveOp::kAllGather, cc.kv_bytes,
               "cp kv gather " + id, deps);
  }
  const int layers = static_cast<int>(cc.layer_fwd.size());
  // Activation offload copies the first layers' activations to the host while the rest of
  // the pass runs (ZeRO-3 and offload are refused together).
  const double offloaded = cc.offloaded_bytes;
  const int split = offloaded > 0 ? cc.offload_end : 0;
  TaskId last;
  if (in_.plan.zero_stage == 3) {
    last = zero3_pass(rc, cc, true, id, deps);
  } else if (split > 0 && split < layers) {
    const TaskId first = pass_tasks(rc, cc, true, 0, split, "fwd " + id + " part 0", id, deps);
    start_offload(rc, id, offloaded, first);
    last = pass_tasks(rc, cc, true, split, layers, "fwd " + id + " part 1", id, {});
  } else {
    last = pass_tasks(rc, cc, true, 0, layers, "fwd " + id, id, deps);
    if (offloaded > 0) start_offload(rc, id, offloaded, last);
  }
  rc.step_compute[index] = last;
  const PassEnd end = model_parallel_comms(rc, cc, true, id, last, tp_inputs);
  last = end.last;
  if (rc.classifier != nullptr) {
    // Song et al.: gather every replica's features, score this rank's classes, reduce the
    // softmax's max and sum, then scatter the feature gradients back.
    collective(rc, GroupKind::kWorld, rc.world, s_.compute, CollectiveOp::kAllGather,
               rc.classifier_features, "classifier feature gather " + id);
    compute(rc, "classifier fwd " + id, whole_pass(*rc.classifier, true));
    collective(rc, GroupKind::kWorld, rc.world, s_.compute, CollectiveOp::kAllReduce,
               2.0 * 4.0 * static_cast<double>(rc.w->shape.micro_batch) * rp_.ranks,
               "softmax reduce " + id);
    compute(rc, "classifier bwd " + id, whole_pass(*rc.classifier, false));
    last = collective(rc, GroupKind::kWorld, rc.world, s_.compute, CollectiveOp::kReduceScatter,
                      rc.classifier_features, "classifier grad scatter " + id)
               .value_or(last);
  }
  rc.kept[id] =
      alloc(rc, "act " + id, kept_activations(rc, cc) - offloaded, MemoryCategory::kActivations);
  rc.in_flight += kept_activations(rc, cc) - offloaded;
  rc.peak_activations = std::max(rc.peak_activations, rc.in_flight + offloaded);
  if (k < chunks_total - 1 && pp > 1) {
    p2p(rc, true, rank_of_virtual_stage(rc, k + 1), s_.send_next, activations_of(st.micro_batch, k),
        cc.output_bytes / split_act, "send act " + id, PassEnd{last, end.overlapped_tp}.all());
  }
  rc.last_pass = last;
  rc.overlapped_tp = end.overlapped_tp;
}

void StepEmitter::start_offload(RankContext& rc, const std::string& id, double bytes,
                                TaskId made_by) {
  // Made on the device like the rest, copied to the host, released once the copy is done.
  const uint32_t buffer = rc.next_buffer++;
  const TaskId made = memory_task(rc, TaskKind::kAlloc, "offloaded act " + id, buffer, bytes,
                                  MemoryCategory::kActivations);
  const TaskId copy = host_copy(rc, "offload act " + id, s_.offload, MemcpyKind::kDeviceToHost,
                                bytes, {made_by, made});
  free(rc, "offloaded act " + id, buffer, bytes, MemoryCategory::kActivations, s_.offload, {copy});
  rc.offloaded[id] = copy;
  rc.offload_in_flight = copy;
}

StepEmitter::Reload StepEmitter::start_reload(RankContext& rc, const std::string& id, double bytes,
                                              const std::vector<TaskId>& inputs) {
  // Fetched back as the backward pass begins (after its inputs, once the compute stream
  // reaches it), while the layers after the offloaded ones run their backward: Megatron-
  // Core's offload handler reloads a layer group during the backward of the group after it.
  const auto out = rc.offloaded.find(id);
  DTSIM_CHECK(out != rc.offloaded.end(), "a reload before its offload");
  std::vector<TaskId> after = inputs;
  after.push_back(out->second);
  if (rc.last_pass) after.push_back(*rc.last_pass);
  rc.offloaded.erase(out);
  Reload r;
  r.buffer = rc.next_buffer++;
  memory_task(rc, TaskKind::kAlloc, "reloaded act " + id, r.buffer, bytes,
              MemoryCategory::kActivations, s_.reload, after);
  r.copy = host_copy(rc, "reload act " + id, s_.reload, MemcpyKind::kHostToDevice, bytes, after);
  return r;
}

std::vector<TaskId> StepEmitter::pass_inputs(RankContext& rc, std::vector<TaskId>& deps) const {
  // A pass starts after the previous pass's overlapped collective (its output is not ready
  // before), and that pass's own collective starts with it: after its inputs and after
  // what the compute stream ran before it.
  if (rc.overlapped_tp) deps.push_back(*rc.overlapped_tp);
  // And after the previous forward's offload copy: Transformer Engine's offload handler
  // makes the compute stream wait for it (synchronize_on_group_commit_forward), which
  // bounds the offloaded activations on the device to one pass's.
  if (rc.offload_in_flight) {
    deps.push_back(*rc.offload_in_flight);
    rc.offload_in_flight.reset();
  }
  std::vector<TaskId> tp_inputs = deps;
  if (rc.last_pass) tp_inputs.push_back(*rc.last_pass);
  return tp_inputs;
}

TaskId StepEmitter::emit_bucketed_backward(RankContext& rc, const ChunkCost& cc, int chunk,
                                           const std::string& id, std::vector<TaskId> deps,
                                           int split, std::optional<TaskId> reloaded) {
  // Gradients are released layer by layer, last layer first; each bucket is reduced as soon
  // as it is full, or, without overlap, after the whole pass.
  const double bucket_bytes = static_cast<double>(in_.plan.bucket.count());
  const int layers = static_cast<int>(cc.layer_bwd.size());
  int segment_end = layers;  // the segment runs layers [l, segment_end)
  double filled = 0;
  std::vector<std::pair<double, TaskId>> buckets;  // its bytes and the part that fills it
  std::vector<TaskId> parts;
  for (int l = layers - 1; l >= 0; --l) {
    filled += cc.layer_dense_params[l] * per_parameter_bytes_.gradients;
    // A segment also ends where the reloaded layers begin (those wait for their copy); the
    // bucket fills on across it.
    const bool full = filled >= bucket_bytes || l == 0;
    if (full || (reloaded && l == split)) {
      std::vector<TaskId> after = parts.empty() ? deps : std::vector<TaskId>{};
      if (reloaded && segment_end == split) after.push_back(*reloaded);
      parts.push_back(
          pass_tasks(rc, cc, false, l, segment_end,
                     "bwd " + id + (layers > 1 ? " part " + std::to_string(parts.size()) : ""), id,
                     std::move(after)));
      segment_end = l;
      if (full) {
        buckets.push_back({filled, parts.back()});
        filled = 0;
      }
    }
  }
  for (size_t n = 0; n < buckets.size(); ++n) {
    const TaskId after = in_.plan.overlap_grad_reduce ? buckets[n].second : parts.back();
    collective(rc, GroupKind::kDp, rc.dp_group, s_.dp, rc.grad_op, buckets[n].first,
               "grad bucket " + std::to_string(chunk) + "." + std::to_string(n), {after},
               rc.grad_algorithm);
  }
  return parts.back();
}

void StepEmitter::emit_backward(RankContext& rc, const PipeStep& st, int index, bool last_of_chunk) {
  const int pp = rp_.pp;
  const int chunks_total = pp * rp_.v;
  const int split_act = rp_.tp * rp_.cp;
  const int k = st.chunk * pp + rc.c.pp;
  const ChunkCost& cc = *rc.chunks[st.chunk];
  const std::string id = step_id(st);
  std::vector<TaskId> deps;
  if (k < chunks_total - 1 && pp > 1) {
    deps.push_back(p2p(rc, false, rank_of_virtual_stage(rc, k + 1), s_.recv_next,
                       gradients_of(st.micro_batch, k), cc.output_bytes / split_act,
                       "recv grad " + id));
  }
  const std::vector<TaskId> tp_inputs = pass_inputs(rc, deps);
  const double offloaded = cc.offloaded_bytes;
  std::optional<Reload> reload;
  if (offloaded > 0) {
    reload = start_reload(rc, id, offloaded, deps);
    rc.in_flight += offloaded;
    rc.peak_activations = std::max(rc.peak_activations, rc.in_flight);
  }
  const int layers = static_cast<int>(cc.layer_bwd.size());
  const int split = reload ? cc.offload_end : 0;
  // Recomputation rebuilds activations in the pass: held from its start to its end (memory
  // tasks run in the compute stream's order).
  const double rebuilt = cc.recompute_transient_bytes;
  uint32_t rebuilt_buffer = 0;
  if (rebuilt > 0) {
    rebuilt_buffer = alloc(rc, "recompute " + id, rebuilt, MemoryCategory::kRecomputed);
    rc.peak_activations = std::max(rc.peak_activations, rc.in_flight + rebuilt);
  }
  // The layers after the offloaded ones run while those come back.
  if (reload && split >= layers) deps.push_back(reload->copy);
  const std::optional<TaskId> reloaded =
      reload && split < layers ? std::optional<TaskId>(reload->copy) : std::nullopt;
  TaskId last;
  if (rc.bucketed && last_of_chunk) {
    last = emit_bucketed_backward(rc, cc, st.chunk, id, deps, reloaded ? split : 0, reloaded);
  } else if (in_.plan.zero_stage == 3) {
    last = zero3_pass(rc, cc, false, id, deps);
  } else if (reloaded) {
    pass_tasks(rc, cc, false, split, layers, "bwd " + id + " part 0", id, deps);
    last = pass_tasks(rc, cc, false, 0, split, "bwd " + id + " part 1", id, {*reloaded});
  } else {
    last = pass_tasks(rc, cc, false, 0, layers, "bwd " + id, id, deps);
  }
  rc.step_compute[index] = last;
  const PassEnd end = model_parallel_comms(rc, cc, false, id, last, tp_inputs);
  last = end.last;
  rc.last_pass = last;
  rc.overlapped_tp = end.overlapped_tp;
  if (rebuilt > 0) {
    free(rc, "recompute " + id, rebuilt_buffer, rebuilt, MemoryCategory::kRecomputed);
  }
  const auto kept = rc.kept.find(id);
  DTSIM_CHECK(kept != rc.kept.end(), "a backward step before its forward");
  free(rc, "act " + id, kept->second, kept_activations(rc, cc) - offloaded,
       MemoryCategory::kActivations);
  rc.kept.erase(kept);
  if (reload) {
    free(rc, "reloaded act " + id, reload->buffer, offloaded, MemoryCategory::kActivations);
  }
  rc.in_flight -= kept_activations(rc, cc);
  if (k > 0 && pp > 1) {
    p2p(rc, true, rank_of_virtual_stage(rc, k - 1), s_.send_prev,
        gradients_of(st.micro_batch, k - 1),
        rc.w->layers[rp_.chunks[k - 1].end - 1].output_bytes / split_act, "send grad " + id,
        end.all());
  }
}

void StepEmitter::emit_step_end(RankContext& rc) {
  const int pp = rp_.pp;
  const int zero = in_.plan.zero_stage;
  std::vector<TaskId> after_backward{rc.step_compute.back()};
  if (rc.overlapped_tp) after_backward.push_back(*rc.overlapped_tp);
  if (rc.tied_table > 0) {
    RankCoords first = rc.c, last_stage = rc.c;
    first.pp = 0;
    last_stage.pp = pp - 1;
    const std::vector<int> pair = {rp_.placement->rank(first), rp_.placement->rank(last_stage)};
    if (rc.c.pp == pp - 1) {
      // The last stage's copy is reduced over the data-parallel group like any gradient.
      collective(rc, GroupKind::kDp, rc.dp_group, s_.dp, rc.grad_op,
                 rc.tied_table * per_parameter_bytes_.gradients, "tied embedding grads",
                 after_backward, rc.grad_algorithm);
    }
    collective(rc, GroupKind::kEmbedding, pair, s_.dp, CollectiveOp::kAllReduce,
               rc.tied_table * per_parameter_bytes_.gradients, "embedding grad sync",
               after_backward);
  }
  // Expert gradients are reduced over the replicas that hold the same experts.
  if (rc.expert > 0 && zero < 3) {
    collective(rc, GroupKind::kExpertDp, rc.edp_group, s_.dp, rc.grad_op,
               rc.expert * per_parameter_bytes_.gradients, "expert grads", after_backward,
               dp_algorithm(rc.edp_group));
  }
  // The optimizer updates this rank's shard once every gradient has been reduced.
  const double dp_size = static_cast<double>(rc.dp_group.size());
  const double expert_share =
      rc.expert > 0 ? rc.expert / static_cast<double>(rc.edp_group.size()) : 0.0;
  const double opt_params = (zero >= 1 ? rc.dense / dp_size + expert_share : rc.dense + rc.expert) +
                            (rc.classifier ? rc.classifier->dense_updated_params : 0);
  OpSignature opt;
  opt.name = "optimizer";
  opt.kind = KernelKind::kOptimizerUpdate;
  opt.pass = OpPass::kStep;
  opt.storage = DType::kFp32;
  opt.math = DType::kFp32;
  opt.rows = 1;
  opt.width = std::llround(opt_params);
  opt.flops = opt_params * optimizer_step_flops_per_parameter(in_.training.optimizer);
  opt.bytes = opt_params * optimizer_step_bytes_per_parameter(in_.training.precision,
                                                              in_.training.optimizer);
  std::vector<TaskId> opt_deps;
  if (rc.has_dp) opt_deps.push_back(rc.last_dp);
  const TaskId step = compute(rc, "optimizer", kernel_ops(rc, opt), opt_deps);
  if ((zero == 1 || zero == 2) && dp_size > 1) {
    collective(rc, GroupKind::kDp, rc.dp_group, s_.dp, CollectiveOp::kAllGather,
               rc.dense * per_parameter_bytes_.weights, "param gather", {step}, rc.grad_algorithm);
  }
  if ((zero == 1 || zero == 2) && rc.expert > 0) {
    collective(rc, GroupKind::kExpertDp, rc.edp_group, s_.dp, CollectiveOp::kAllGather,
               rc.expert * per_parameter_bytes_.weights, "expert param gather", {step},
               dp_algorithm(rc.edp_group));
  }
  if (!rc.geo_group.empty()) {
    collective(rc, GroupKind::kGeo, rc.geo_group, s_.dp, CollectiveOp::kAllReduce,
               (rc.dense + rc.expert) * per_parameter_bytes_.weights, "cross-region average",
               {step}, dp_algorithm(rc.geo_group));
  }
}

void StepEmitter::emit_rank(int rank) {
  RankContext rc = context_of(rank);
  RankRole role;
  price_chunks(rc, role);
  role.model_state_bytes = allocate_states(rc, role);
  role.workspace_bytes = static_cast<double>(
      in_.cluster->devices[rank].spec->efficiency.gemm_workspace.count());
  if (role.workspace_bytes > 0)
    alloc(rc, "workspace", role.workspace_bytes, MemoryCategory::kWorkspace);
  const std::vector<PipeStep> order =
      pipeline_order(in_.plan.schedule, rc.c.pp, rp_.pp, rp_.micro_batches, rp_.v);
  std::vector<int> last_bwd(rp_.v, -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    if (!order[i].forward) last_bwd[order[i].chunk] = i;
  }
  rc.step_compute.resize(order.size());
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    if (order[i].forward) {
      rc.micro_batch = static_cast<uint32_t>(order[i].micro_batch);
      emit_forward(rc, order[i], i);
    } else {
      rc.micro_batch = static_cast<uint32_t>(order[i].micro_batch);
      emit_backward(rc, order[i], i, i == last_bwd[order[i].chunk]);
    }
  }
  rc.micro_batch = kNoMicroBatch;
  emit_step_end(rc);

  role.dp = rc.c.dp;
  role.pp = rc.c.pp;
  role.tp = rc.c.tp;
  role.cp = rc.c.cp;
  role.micro_batch = rp_.replica_micro_batch[rc.c.dp];
  role.params = static_cast<int64_t>(rc.dense + rc.expert +
                                     (rc.classifier ? rc.classifier->dense_params : 0));
  role.activation_bytes_peak = rc.peak_activations;
  out_.roles[rank] = role;
}

}  // namespace

std::string_view granularity_name(Granularity g) {
  return g == Granularity::kLayer ? "layer" : "chunk";
}

LoweredStep lower_training_step(const LoweringInput& in) {
  DTSIM_CHECK(in.cluster != nullptr && in.costs != nullptr, "lowering needs a cluster and costs");
  const ResolvedPlan rp = lowering_detail::resolve_plan(in);
  LoweredStep out;
  out.plan = in.plan;
  out.plan.dp = rp.dp;
  out.plan.etp = rp.etp;
  out.plan.replica_micro_batch = rp.replica_micro_batch;
  out.plan.tp_shares = rp.tp_shares;
  if (in.plan.balance_stages && is_transformer(in.model.family) && !rp.workloads.empty()) {
    // The balanced split, as blocks per virtual stage: what another lowering of the same
    // plan (a batch-size phase) reuses.
    const std::vector<int64_t> blocks = transformer_blocks(rp.workloads.begin()->second, rp.chunks);
    out.plan.stage_layers.assign(blocks.begin(), blocks.end());
  }
  out.micro_batches = rp.micro_batches;
  out.notes = rp.notes;
  out.roles.resize(rp.ranks);
  int64_t samples = 0;
  for (int64_t b : rp.replica_micro_batch) samples += b * rp.micro_batches;
  out.samples_per_iteration = samples;
  const Workload& any = rp.workloads.begin()->second;
  out.tokens_per_iteration = samples * any.tokens_per_sample();
  out.model_flops_per_iteration = model_flops_per_iteration(any, samples);
  if (in.plan.shard_classifier) {
    // The sharded classifier runs once a micro-batch round on all replicas' samples
    // together, and a KNN softmax's classes grow with them: count it as it runs.
    int64_t round = 0;
    for (int64_t b : rp.replica_micro_batch) round += b;
    const Workload at_round = build_workload(
        in.model, WorkloadShape{round, in.training.seq_len, in.training.precision,
                                in.training.flash_attention});
    const auto classifier_flops = [](const Workload& w) {
      double f = 0;
      for (const Layer& l : w.layers) {
        if (l.kind == LayerKind::kClassifier) f += l.fwd_flops() + l.bwd_flops();
      }
      return f;
    };
    out.model_flops_per_iteration +=
        classifier_flops(at_round) * rp.micro_batches -
        classifier_flops(any) * static_cast<double>(samples) / static_cast<double>(any.shape.micro_batch);
  }
  out.model_params = any.params();
  StepEmitter emitter(in, rp, out);
  for (int r = 0; r < rp.ranks; ++r) {
    if (in.control != nullptr) {
      if (in.control->stop_requested()) {
        out.cancelled = true;
        break;
      }
      in.control->report("lowering", r, rp.ranks);
    }
    // Bracketed, so that the ranks that run alike are stored once (TaskGraph).
    out.graph.begin_rank(r);
    emitter.emit_rank(r);
    out.graph.end_rank();
  }
  return out;
}

namespace {

// Heap bytes of the ops' vector, their names beyond the short-string buffer and their
// bound operands.
double priced_ops_bytes(const PricedOps& ops) {
  double b = static_cast<double>(ops.capacity() * sizeof(PricedOp));
  for (const PricedOp& p : ops) {
    if (p.op.name.size() > 15) b += static_cast<double>(p.op.name.capacity() + 1);
    b += static_cast<double>(p.operands.capacity() * sizeof(OperandBinding));
  }
  return b;
}

template <typename T>
double vector_bytes(const std::vector<T>& v) {
  return static_cast<double>(v.capacity() * sizeof(T));
}

double chunk_cost_bytes(const ChunkCost& cc) {
  double b = sizeof(ChunkCost) + vector_bytes(cc.layer_fwd_ops) + vector_bytes(cc.layer_bwd_ops) +
             vector_bytes(cc.layer_fwd_comms) + vector_bytes(cc.layer_bwd_comms) +
             vector_bytes(cc.layer_fwd) + vector_bytes(cc.layer_bwd) +
             vector_bytes(cc.layer_dense_params) + vector_bytes(cc.layer_expert_params) +
             vector_bytes(cc.layer_dense_tensors);
  for (const PricedOps& ops : cc.layer_fwd_ops) b += priced_ops_bytes(ops);
  for (const PricedOps& ops : cc.layer_bwd_ops) b += priced_ops_bytes(ops);
  for (const auto& comms : cc.layer_fwd_comms) b += vector_bytes(comms);
  for (const auto& comms : cc.layer_bwd_comms) b += vector_bytes(comms);
  for (const auto& tensors : cc.layer_dense_tensors) b += vector_bytes(tensors);
  return b;
}

}  // namespace

double StepEmitter::working_bytes(double calls, double member_scale) const {
  constexpr double kMapNode = 32;  // a std::map node's links and colour, before its value
  double b = book_.bytes(calls, member_scale);
  for (const auto& [key, cc] : costs_) b += kMapNode + sizeof(key) + chunk_cost_bytes(cc);
  b += static_cast<double>(pass_ops_.size()) * (kMapNode + sizeof(decltype(pass_ops_)::value_type));
  for (const auto& [key, segments] : segments_) {
    b += kMapNode + sizeof(key) + vector_bytes(segments);
    for (const PassSegment& seg : segments) b += vector_bytes(seg.comms);
  }
  for (const auto& [key, ops] : kernel_ops_) {
    b += kMapNode + sizeof(key) + sizeof(ops) +
         static_cast<double>(ops.size()) * sizeof(std::pair<OpSignature, TaskOps>);
  }
  return b;
}

StepEstimate estimate_step(const LoweringInput& in) {
  DTSIM_CHECK(in.cluster != nullptr && in.costs != nullptr, "lowering needs a cluster and costs");
  const ResolvedPlan rp = lowering_detail::resolve_plan(in);
  LoweredStep sample;
  sample.roles.resize(rp.ranks);
  StepEmitter emitter(in, rp, sample);
  // Every tensor rank of every stage: the emitter prices chunks per tensor rank (shards may
  // be uneven), so these ranks fill its caches as the whole lowering does.
  for (int stage = 0; stage < rp.pp; ++stage) {
    for (int t = 0; t < rp.tp; ++t) {
      RankCoords c;
      c.pp = stage;
      c.tp = t;
      const int rank = rp.placement->rank(c);
      sample.graph.begin_rank(rank);
      emitter.emit_rank(rank);
      sample.graph.end_rank();
    }
  }
  const TaskGraph& g = sample.graph;
  const double per_stage = static_cast<double>(rp.ranks) / (static_cast<double>(rp.pp) * rp.tp);
  TaskGraphCounts counts = g.counts();
  // The ranks of a stage share its op lists; the rest grows with the ranks.
  const double op_lists = counts.op_list_bytes;
  counts.tasks *= per_stage;
  counts.dependencies *= per_stage;
  counts.transfers *= per_stage;
  counts.messages *= per_stage;
  counts.overrides *= per_stage;
  counts.segments *= per_stage;
  counts.op_list_bytes = op_lists;
  // The other replicas' ranks are stored as instances of the sample's when they run alike:
  // on the same device, with as many micro-batches. Otherwise each may need records of its
  // own, and the estimate counts them so.
  bool replicas_alike =
      std::adjacent_find(rp.replica_micro_batch.begin(), rp.replica_micro_batch.end(),
                         std::not_equal_to<>()) == rp.replica_micro_batch.end();
  for (const ClusterDevice& d : in.cluster->devices)
    replicas_alike &= d.spec == in.cluster->devices.front().spec;
  if (!replicas_alike) {
    counts.records *= per_stage;
    counts.stored_dependencies *= per_stage;
    counts.stored_transfers *= per_stage;
    counts.name_chars *= per_stage;
    counts.templates *= per_stage;
  }
  // A call whose n members hold k of the sample's tasks stands for per_stage * k / n calls.
  std::vector<double> sampled(g.collectives().size(), 0);
  for (const TaskView t : g.tasks()) {
    if (t.kind == TaskKind::kCollective) ++sampled[t.collective];
  }
  counts.collectives = counts.collective_members = counts.collective_label_chars = 0;
  for (size_t i = 0; i < sampled.size(); ++i) {
    const CollectiveCall& call = g.collectives()[i];
    const double share = per_stage * sampled[i] / static_cast<double>(call.members.size());
    counts.collectives += share;
    counts.collective_members += per_stage * sampled[i];
    if (call.label.size() > 15) counts.collective_label_chars += share * (call.label.size() + 1);
  }
  StepEstimate out;
  out.graph = counts;
  out.working_bytes = emitter.working_bytes(counts.collectives, per_stage);
  return out;
}

}  // namespace dtsim::models
