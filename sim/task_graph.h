// The TaskGraph: per-rank tasks (compute, collective, send/recv, memcpy, alloc/free) with
// dependencies and stream assignment. Both the simulator and the real executor run it.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/collectives/collective_plan.h"
#include "sim/device.h"
#include "sim/dtype.h"
#include "sim/observer.h"
#include "sim/op_operands.h"
#include "sim/op_signature.h"
#include "sim/task_graph_counts.h"
#include "sim/units.h"

namespace dtsim {

using TaskId = uint32_t;
// The kernels a compute task runs, in order: an index into TaskGraph's op lists.
using OpListId = uint32_t;
inline constexpr OpListId kNoOps = UINT32_MAX;
// A compute task of no micro-batch (the optimizer step): its ops bind no activations.
inline constexpr uint32_t kNoMicroBatch = UINT32_MAX;

enum class MemcpyKind : uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kPeer };
std::string_view memcpy_kind_name(MemcpyKind k);
std::optional<MemcpyKind> memcpy_kind_from_name(std::string_view name);

// What an allocation holds, for memory reports and a real executor's allocator.
enum class MemoryCategory : uint8_t {
  kUnspecified,  // a task-graph file that did not say
  kWeights,
  kGradients,
  kOptimizerStates,
  kActivations,  // kept from a forward pass for its backward
  kRecomputed,   // rebuilt by recomputation inside a backward pass
  kWorkspace,
  kCommBuffers,
};
inline constexpr MemoryCategory kAllMemoryCategories[] = {
    MemoryCategory::kUnspecified,     MemoryCategory::kWeights,     MemoryCategory::kGradients,
    MemoryCategory::kOptimizerStates, MemoryCategory::kActivations, MemoryCategory::kRecomputed,
    MemoryCategory::kWorkspace,       MemoryCategory::kCommBuffers};
std::string_view memory_category_name(MemoryCategory c);
std::optional<MemoryCategory> memory_category_from_name(std::string_view name);

// What a pipeline send or receive moves: the output of virtual stage `chunk` (counted over
// the whole pipeline: chunk c of stage s of pp is c * pp + s) for micro-batch `micro_batch`,
// forward, or the gradient with respect to that output, backward. The send and the receive
// of one message carry the same transfer, so a real executor knows which buffer it fills.
enum class PipelineTensor : uint8_t { kActivations, kActivationGradients };
std::string_view pipeline_tensor_name(PipelineTensor t);
std::optional<PipelineTensor> pipeline_tensor_from_name(std::string_view name);
struct PipelineTransfer {
  PipelineTensor tensor = PipelineTensor::kActivations;
  uint32_t micro_batch = 0;
  uint32_t chunk = 0;
  bool operator==(const PipelineTransfer&) const = default;
};

// One collective call; every member rank holds one task that refers to it. The call
// starts when every member's task is ready (as NCCL's kernels rendezvous).
struct CollectiveCall {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  std::vector<int> members;
  Bytes bytes;
  CollectiveOptions options;
  std::string label;
  // Priced by the alpha-beta estimate on the group's measured links instead of flow by
  // flow. Right for calls whose links nothing else loads at the time (tensor-parallel
  // collectives inside an NVSwitch node), and far cheaper to simulate.
  bool analytical = false;
  // The task stands for `calls` back-to-back calls of bytes / calls each (a chunk's
  // per-layer tensor-parallel exchanges, lowered at chunk granularity): the algorithm, the
  // protocol and the library's latency follow one call's size, and are paid per call.
  int calls = 1;
  int call_count() const { return std::max(1, calls); }
  Bytes bytes_per_call() const { return Bytes(bytes.count() / call_count()); }
  // What a real executor hands the library: the element type, and for a reducing op
  // (is_reducing) how elements combine.
  DType dtype = DType::kBf16;
  ReduceOp reduce = ReduceOp::kSum;
};

// What a task is, apart from its name and dependencies: the part that Task (what callers
// add), the graph's compact record and TaskView (what it gives back) share.
struct TaskFields {
  // compute: how long its kernels run on its device (the cost model's price of `ops`, or
  // the time a scenario gave).
  Duration duration;
  // send, recv, memcpy, alloc, free
  Bytes bytes;
  int rank = 0;
  // send, recv (peer = the other rank; matched by (sender, receiver, tag) in id order),
  // memcpy (peer for kPeer)
  int peer = -1;
  uint32_t collective = 0;  // collective: index into TaskGraph::collectives()
  // send, recv: the tag they match by. compute: the micro-batch whose activations its ops'
  // operands bind (TaskGraph::op_operands; kNoMicroBatch for none): the same op list runs
  // for every micro-batch, on that micro-batch's tensors.
  uint32_t tag = 0;
  // compute: the kernels it runs (TaskGraph::op_list); kNoOps when the scenario gave only
  // a duration.
  OpListId ops = kNoOps;
  // alloc, free: the buffer, so that a free names the alloc it undoes (ids are per rank;
  // 0 when a task-graph file gave none).
  uint32_t buffer = 0;
  uint16_t stream = 0;  // index into TaskGraph::streams()
  TaskKind kind = TaskKind::kCompute;
  MemcpyKind memcpy_kind = MemcpyKind::kHostToDevice;
  MemoryCategory memory = MemoryCategory::kUnspecified;  // alloc, free
};

// Whether the task's `peer` names the other rank: send, recv and peer memcpy.
inline bool has_peer(const TaskFields& t) {
  return t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv ||
         (t.kind == TaskKind::kMemcpy && t.memcpy_kind == MemcpyKind::kPeer);
}

struct Task : TaskFields {
  std::string name;
  std::vector<TaskId> deps;
  // send, recv of a pipeline: the tensor it moves (TaskGraph::transfer reads it back).
  std::optional<PipelineTransfer> transfer;
};

// A task's dependencies as the graph holds them: each as its distance back from the task
// (the id minus the dependency's, modulo 2^32), so that the ranks that run alike share one
// list whatever their ids (TaskGraph::end_rank). Iterating gives the ids back.
class DepList {
 public:
  using value_type = TaskId;
  class iterator {
   public:
    using value_type = TaskId;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const uint32_t* p, TaskId id) : p_(p), id_(id) {}
    TaskId operator*() const { return id_ - *p_; }
    iterator& operator++() {
      ++p_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++p_;
      return old;
    }
    bool operator==(const iterator& o) const { return p_ == o.p_; }

   private:
    const uint32_t* p_ = nullptr;
    TaskId id_ = 0;
  };
  using const_iterator = iterator;
  DepList() = default;
  DepList(const uint32_t* back, size_t n, TaskId id) : back_(back), n_(n), id_(id) {}
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  TaskId operator[](size_t i) const { return id_ - back_[i]; }
  iterator begin() const { return {back_, id_}; }
  iterator end() const { return {back_ + n_, id_}; }

 private:
  const uint32_t* back_ = nullptr;
  size_t n_ = 0;
  TaskId id_ = 0;
};

// A task as the graph holds it, read back: the name and the dependencies view the graph's
// storage (valid while the graph lives and is not added to).
struct TaskView : TaskFields {
  std::string_view name;
  DepList deps;
};

// A compute task priced from CPU kernels timed beside co-runners (OpCost::co_runners):
// `duration` is its time while `co_runners` other cores of its CPU compute, and
// `alone_fraction` of that its time with the CPU to itself. The compute model prices it
// between the two by how many of its neighbours compute meanwhile (sim/compute_model.h).
struct Crowding {
  float alone_fraction = 1;
  uint16_t co_runners = 0;  // 0: the task's time holds whatever its neighbours do
};

// Tasks on one (rank, stream) run one at a time in the order they were added, like CUDA
// streams; tasks on different streams run concurrently once their dependencies are done.
// A training step holds millions of tasks, so the graph keeps them compact: fixed-size
// records, every name in one character array and every dependency list in one id array;
// the ranks of a stage run the same kernels, so each distinct op list is stored once and
// tasks point at it.
//
// RANKS STORED ONCE. The ranks of a data-parallel replica's stage (and the tensor-parallel
// peers of one) add the same tasks but for their rank, their peers and their calls. A
// builder that adds a rank's tasks between begin_rank and end_rank lets the graph keep such
// a rank as an instance of the first rank's records (its template): the rank, its first
// id, and its peers and calls in task order. Dependencies are stored as distances back
// (DepList), so a template's lists hold for every instance. Reading a task back gives the
// same view either way; ids do not change. A step of 16,384 GPUs holds as many records as
// its distinct ranks (a few per pipeline stage) instead of 75 M.
class TaskGraph {
 public:
  // Returns the stream's index, adding it if new.
  uint16_t stream(std::string_view name);
  const std::vector<std::string>& streams() const { return streams_; }

  // A runtime counts a task's unfinished dependencies in 24 bits (its state is 24 bytes).
  static constexpr size_t kMaxDependencies = (size_t{1} << 24) - 1;
  // Throws std::length_error past 2^32 - 1 tasks or dependencies (ids are 32-bit) or a task
  // with more than kMaxDependencies, and std::invalid_argument for an op list the graph
  // does not hold, ops on a task that is not a compute task, or a transfer on one that is
  // not a send or a recv.
  TaskId add(const Task& task);
  // Brackets one rank's tasks (every task added in between must be that rank's): at
  // end_rank the graph stores them as an instance of an earlier rank's records when they are
  // alike in all but the rank, peers and calls, and keeps them as they are otherwise.
  void begin_rank(int rank);
  void end_rank();
  // A compute task's duration, set once its ops are priced. On a rank stored as an instance,
  // a duration its template does not have gives that rank records of its own.
  void set_duration(TaskId id, Duration d);
  // Tasks without crowding (every task of a GPU step) cost nothing: the table exists only
  // once a task has some.
  void set_crowding(TaskId id, Crowding c);
  Crowding crowding(TaskId id) const { return id < crowding_.size() ? crowding_[id] : Crowding{}; }
  bool has_crowding() const { return !crowding_.empty(); }

  // Returns the list's id: the one it already has when an equal list (signatures and
  // operands) was added before. `operands` holds one entry per op, or none when the ops
  // bind no tensors (each runs on scratch operands of its own); std::invalid_argument
  // otherwise.
  OpListId add_op_list(std::span<const OpSignature> ops, std::span<const OpOperands> operands = {});
  std::span<const OpSignature> op_list(OpListId id) const {
    const uint32_t first = id == 0 ? 0 : op_list_end_[id - 1];
    return {ops_.data() + first, op_list_end_[id] - first};
  }
  // The tensors each op of the list binds, one entry per op (empty entries for ops that
  // bind none).
  std::span<const OpOperands> op_operands(OpListId id) const {
    const uint32_t first = id == 0 ? 0 : op_list_end_[id - 1];
    return {operands_.data() + first, op_list_end_[id] - first};
  }
  size_t num_op_lists() const { return op_list_end_.size(); }
  // Bytes the op lists take (signatures and their index), for memory reports.
  size_t op_list_bytes() const;
  uint32_t add_collective(CollectiveCall call);
  // Settles a call's algorithm (resolve_auto_algorithms picks those left kAuto).
  void set_collective_algorithm(uint32_t id, CollectiveAlgorithm a) {
    collectives_[id].algorithm = a;
  }
  // Adds the call and one task per member on `stream`, named after its label, with no
  // dependencies (stream order sequences calls on one stream). Returns the call's id.
  uint32_t add_collective_with_tasks(CollectiveCall call, uint16_t stream);

  size_t num_tasks() const { return num_tasks_; }
  // Records held: the tasks of distinct ranks (and of ranks added outside begin_rank).
  size_t num_records() const { return records_.size(); }
  TaskView task(TaskId id) const;
  // What a send or recv moves, when it was given. Transfers are few next to tasks (two per
  // micro-batch and pipeline boundary on a rank), so they live apart from the records, and
  // the ranks of a stage move the same ones: each distinct transfer is stored once.
  std::optional<PipelineTransfer> transfer(TaskId id) const;
  size_t num_transfers() const { return num_transfer_tasks_; }

  // The tasks in id order, as views: for (const TaskView t : graph.tasks()).
  class TaskList {
   public:
    class iterator {
     public:
      using value_type = TaskView;
      using difference_type = std::ptrdiff_t;
      // In order, a step costs no search for the task's segment.
      iterator(const TaskGraph* g, TaskId id) : g_(g), id_(id), segment_(g->segment_index(id)) {}
      TaskView operator*() const { return g_->view(g_->segments_[segment_], id_); }
      iterator& operator++() {
        ++id_;
        if (segment_ + 1 < g_->segments_.size() && g_->segments_[segment_ + 1].first_id == id_)
          ++segment_;
        return *this;
      }
      bool operator==(const iterator& o) const { return id_ == o.id_; }

     private:
      const TaskGraph* g_;
      TaskId id_;
      size_t segment_;
    };
    explicit TaskList(const TaskGraph* g) : g_(g) {}
    size_t size() const { return g_->num_tasks(); }
    bool empty() const { return size() == 0; }
    TaskView operator[](size_t i) const { return g_->task(static_cast<TaskId>(i)); }
    iterator begin() const { return {g_, 0}; }
    iterator end() const { return {g_, static_cast<TaskId>(size())}; }

   private:
    const TaskGraph* g_;
  };
  TaskList tasks() const { return TaskList(this); }

  const std::vector<CollectiveCall>& collectives() const { return collectives_; }

  // What the graph holds, counted; and the bytes a graph of `counts` takes once built
  // (its records, names, dependencies, transfers and calls: what a memory estimate adds
  // before building one).
  TaskGraphCounts counts() const;
  static double bytes_for(const TaskGraphCounts& counts);

  // A send and the recv it meets: the n-th send of a (sender, receiver, tag) meets the n-th
  // recv of that key, both in id order, whenever each is issued.
  struct MessagePair {
    TaskId send = 0;
    TaskId recv = 0;
  };
  // Structural problems (dangling or forward dependencies, a collective whose member set
  // differs from the ranks holding its tasks, unmatched sends, ranks out of range), one
  // sentence each naming the task. Empty when the graph can run. With `pairs`, it is given
  // every send and the recv it meets (complete only when no problem is found).
  std::vector<std::string> validate(int num_ranks, std::vector<MessagePair>* pairs = nullptr) const;
  // Every send and the recv it meets, ordered by key and then id: the pairing that validate
  // checks and a runtime runs. A key sent more or less often than it is received pairs
  // none of its messages (validate names it).
  std::vector<MessagePair> message_pairs() const;

  // How the graph stores the tasks of one begin_rank/end_rank bracket: ids [first_id,
  // first_id + size) read records [first_record, first_record + size), and `overrides` are
  // the rank's peers (sends, recvs, peer copies) and calls, in task order. Ranks whose
  // brackets read the same records run the same tasks but for those. Tasks added outside a
  // bracket, a bracket stored as added (end_rank) and a bracket still open come as layouts
  // of rank -1, with no overrides (their tasks hold their own).
  struct RankLayout {
    int rank = -1;
    TaskId first_id = 0;
    uint32_t size = 0;
    uint32_t first_record = 0;
    std::span<const int32_t> overrides;
  };
  // In id order.
  std::vector<RankLayout> rank_layouts() const;

 private:
  // A send or recv as messages are paired: its key (sender, receiver, tag), then its id.
  struct MessageEntry {
    uint64_t ranks = 0;   // sender << 32 | receiver, each as 32 bits with the sign flipped
    uint64_t tag_id = 0;  // tag << 32 | id
    auto operator<=>(const MessageEntry&) const = default;
  };
  static MessageEntry message_entry(const TaskView& t, TaskId id);
  // A key whose sends and recvs differ in number: sends minus recvs.
  struct UnmatchedKey {
    int sender = 0;
    int receiver = 0;
    uint32_t tag = 0;
    int64_t balance = 0;
  };
  // Sorts both lists and pairs the n-th send of each key with its n-th recv.
  static void pair_messages(std::vector<MessageEntry>& sends, std::vector<MessageEntry>& recvs,
                            std::vector<MessagePair>& pairs, std::vector<UnmatchedKey>& unmatched);
  // 64 bytes per task, against 128 and two heap blocks for a Task. In a template (a rank
  // stored once) a send's, recv's or peer copy's peer and a collective's call are the
  // instance's: `fields.collective` holds their index among the rank's overrides instead.
  struct Record {
    TaskFields fields;
    uint64_t name_first = 0;  // into names_
    uint32_t name_size = 0;
    uint32_t deps_first = 0;  // into deps_; the list ends where the next record's begins
  };
  static_assert(sizeof(Record) == 64);
  // Consecutive ids [first_id, the next segment's first_id) read consecutive records from
  // first_record: as added (rank -1), or as an instance of a template for `rank`.
  struct Segment {
    TaskId first_id = 0;
    uint32_t first_record = 0;
    int rank = -1;
    uint32_t first_override = 0;  // into overrides_: the rank's peers and calls in task order
    bool own = false;             // an instance whose records no other rank reads
  };
  // The rank whose tasks are being added (begin_rank), and where they began.
  struct OpenRank {
    int rank = -1;
    TaskId first_id = 0;
    uint32_t first_record = 0;
    size_t deps = 0;
    size_t names = 0;
    size_t transfers = 0;
  };
  struct Template {
    uint32_t first_record = 0;
    uint32_t size = 0;
    uint32_t overrides = 0;
  };
  size_t segment_index(TaskId id) const;
  TaskView view(const Segment& s, TaskId id) const;
  // Where record i's dependencies end in deps_: where the next record's begin.
  uint32_t deps_end(uint32_t i) const {
    return i + 1 < records_.size() ? records_[i + 1].deps_first
                                   : static_cast<uint32_t>(deps_.size());
  }
  // The record of the task as its ids read it.
  uint32_t record_of(TaskId id) const {
    const Segment& s = segments_[segment_index(id)];
    return s.first_record + (id - s.first_id);
  }
  // Whether records [a, a + n) and [b, b + n) are alike but for ranks, peers and calls.
  bool same_records(uint32_t a, uint32_t b, uint32_t n) const;
  size_t hash_records(uint32_t first, uint32_t n) const;
  // Gives segment `s` (a template's instance) records of its own.
  void own_records(Segment& s);
  // The transfer entries of records [first, first + n).
  std::span<const std::pair<uint32_t, uint32_t>> transfers_of(uint32_t first, uint32_t n) const;

  std::vector<std::string> streams_;
  std::vector<Record> records_;
  std::string names_;
  std::vector<uint32_t> deps_;  // distances back (DepList)
  std::vector<Segment> segments_;
  std::vector<int32_t> overrides_;
  std::vector<Template> templates_;
  std::unordered_multimap<size_t, uint32_t> template_index_;  // hash -> templates_ index
  OpenRank open_;
  size_t num_tasks_ = 0;
  size_t num_deps_ = 0;  // over every task, as a runtime lays them out
  size_t num_messages_ = 0;
  size_t num_transfer_tasks_ = 0;
  std::vector<CollectiveCall> collectives_;
  std::vector<std::pair<uint32_t, uint32_t>>
      transfer_of_task_;  // by record, in record order; into transfers_
  std::vector<PipelineTransfer> transfers_;                    // each distinct one once
  // Hashed, not ordered: every pipeline send and recv looks its transfer up while the
  // graph's records stream into memory, and a tree's walk missed the cache at every level.
  struct TransferHash {
    size_t operator()(const PipelineTransfer& t) const {
      // The tensor gets bits of its own: folded into the chunk's, (activations, c) and
      // (gradients, c ^ 1) would always collide.
      uint64_t h = (uint64_t{t.micro_batch} << 32 | t.chunk) * 0x9E3779B97F4A7C15ull;
      h ^= (static_cast<uint64_t>(t.tensor) + 1) * 0xC2B2AE3D27D4EB4Full;
      return static_cast<size_t>(h ^ (h >> 32));
    }
  };
  std::unordered_map<PipelineTransfer, uint32_t, TransferHash> transfer_index_;
  std::vector<OpSignature> ops_;
  std::vector<OpOperands> operands_;   // beside ops_, one per op
  std::vector<uint32_t> op_list_end_;  // list i is ops_[end[i - 1] (0 for the first), end[i])
  std::unordered_multimap<size_t, OpListId> op_list_index_;  // by the list's hash
  std::vector<Crowding> crowding_;  // by task id, up to the last task that has some
};

// The last segment that begins at or before `id` (0 for an empty graph).
inline size_t TaskGraph::segment_index(TaskId id) const {
  const auto after = std::upper_bound(segments_.begin(), segments_.end(), id,
                                      [](TaskId i, const Segment& s) { return i < s.first_id; });
  return after == segments_.begin() ? 0 : static_cast<size_t>(after - segments_.begin()) - 1;
}

inline TaskView TaskGraph::view(const Segment& s, TaskId id) const {
  const uint32_t at = s.first_record + (id - s.first_id);
  const Record& r = records_[at];
  TaskView v;
  static_cast<TaskFields&>(v) = r.fields;
  if (s.rank >= 0) {
    v.rank = s.rank;
    if (has_peer(v)) {
      v.peer = overrides_[s.first_override + r.fields.collective];
      v.collective = 0;
    } else if (v.kind == TaskKind::kCollective) {
      v.collective = static_cast<uint32_t>(overrides_[s.first_override + r.fields.collective]);
    }
  }
  v.name = std::string_view(names_).substr(r.name_first, r.name_size);
  v.deps = DepList(deps_.data() + r.deps_first, deps_end(at) - r.deps_first, id);
  return v;
}

inline TaskView TaskGraph::task(TaskId id) const { return view(segments_[segment_index(id)], id); }

}  // namespace dtsim
