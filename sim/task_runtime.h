// The TaskGraph runtime: issues ready tasks onto the compute and network models, holds
// collective and send/recv rendezvous, and accounts per-rank time and memory.
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "sim/run_control.h"
#include "sim/simulation.h"

namespace dtsim {

class TaskRuntime {
 public:
  TaskRuntime(Simulation& sim, const TaskGraph& graph);
  RunResult run(const RunControl& control);
  // See Simulation::peak_bytes_for: the arrays below, counted where each phase holds most.
  static double peak_bytes_for(const TaskGraphCounts& counts, int ranks, size_t streams,
                               bool observed);
  // See Simulation::network_bytes_for.
  static double network_bytes_for(Simulation& sim, const TaskGraph* graph);

 private:
  // Time accounting per rank: counters of tasks per state, integrated at every change.
  // A collective or a send/recv waits at its rendezvous (kCollectiveWait, kPeerWait) until
  // every member (or the peer) is there, then communicates.
  enum class TimeCategory : uint8_t {
    kCompute,
    kCommunication,
    kCollectiveWait,
    kPeerWait,
    kNone,
  };
  // What the runtime reads of a task to issue and finish it, in slot order next to its
  // state: the graph's records (in the graph's order, 64 bytes each) are read only for the
  // rare memcpy and for observers. 24 bytes: a step of 75 M tasks
  // pays 75 MB for each byte here. What it need not hold it finds elsewhere: whether the
  // task started or ended from its stream (a stream runs its tasks one at a time, in order:
  // those before its head have ended, the head has started while the stream is busy), and
  // what it keeps its rank doing from its kind (activity_of).
  struct TaskState {
    // compute: its duration on its device; send, recv, alloc, free, memcpy: its bytes
    int64_t ns_or_bytes = 0;
    TaskId graph_id = 0;       // the task's id in the graph (slots are numbered differently)
    uint32_t stream = 0;       // index into streams_, which knows the rank
    // collective: index into the graph's calls; send, recv: the slot of the task it meets
    // (TaskGraph::MessagePair), so that neither looks for the other when it is issued.
    uint32_t call_or_partner = 0;
    uint32_t deps_left : 24 = 0;  // TaskGraph::kMaxDependencies bounds a task's list
    TaskKind kind : 7 = TaskKind::kCompute;
    bool arrived : 1 = false;  // send, recv: issued first, and waiting for the task it meets
  };
  static_assert(sizeof(TaskState) == 24, "a task's state is 24 bytes");
  // A stream's tasks in order are stream_tasks_[first, end); `head` is the next to run,
  // `next_transfer` its first unfinished task that moves bytes between ranks (end: none).
  struct Stream {
    uint32_t first = 0;
    uint32_t end = 0;
    uint32_t head = 0;
    uint32_t next_transfer = 0;
    int rank = 0;
    bool busy = false;
    bool empty() const { return first == end; }
    bool done() const { return head >= end; }
  };
  struct RankClock {
    int compute_running = 0;
    int comm_running = 0;
    int waiting = 0;
    int waiting_p2p = 0;
    int nccl_running = 0;  // collectives and send/recv transferring (they slow compute)
    Time last;
    RankStats stats;
    Bytes memory_in_use;
  };

  // The runtime numbers its tasks by slot: the first task of every rank, then the second
  // of every rank, and so on. Ranks advance together, so the tasks that run near one
  // another in time sit near one another in memory; in the graph's order (rank after rank)
  // each task issued or finished was a cache miss of its own.
  using Slot = uint32_t;
  TaskView view(Slot s) const { return graph_.task(state_[s].graph_id); }
  // A task's 24 bytes lie across two cache lines for a quarter of the slots: fetch both.
  void prefetch_state(Slot s) const {
    const char* first = reinterpret_cast<const char*>(&state_[s]);
    __builtin_prefetch(first, 1);
    __builtin_prefetch(first + sizeof(TaskState) - 1, 1);
  }
  int rank_of(Slot s) const { return streams_[state_[s].stream].rank; }
  uint32_t stream_index(const TaskView& t) const {
    return static_cast<uint32_t>(t.rank * graph_.streams().size() + t.stream);
  }
  // Tasks that may move bytes between ranks: collectives, sends, recvs and memory copies
  // (a peer copy among them; the others are counted too, which only asks more).
  static bool is_transfer(const TaskState& t) {
    return t.kind == TaskKind::kCollective || t.kind == TaskKind::kSend ||
           t.kind == TaskKind::kRecv || t.kind == TaskKind::kMemcpy;
  }
  // Moves the stream's next_transfer to its first transfer task at or after `from`,
  // keeping the counts below; `was`: the transfer that was its next (and just ended), if any.
  void advance_transfer(Stream& s, uint32_t from, const TaskState* was);
  // No transfer but call c's can start before c ends: every stream with a transfer left
  // has one of c's tasks as its next (a stream runs its tasks in order).
  bool only_call_can_transfer(uint32_t c) const {
    return transfer_heads_[c] == streams_with_transfers_;
  }
  void try_issue(Slot s);
  void issue(Slot s);
  void finish(Slot s);
  void finish_later(Slot s);
  // What task s keeps its rank doing while it runs (a memcpy's kind is read in the graph).
  TimeCategory activity_of(Slot s) const;
  // Integrates the rank's clock up to now, then moves `delta` tasks into `activity`.
  void account(int rank, TimeCategory activity, int delta);
  // `slows_compute`: the rank's kernels run at the device's comm_compute_slowdown meanwhile
  // (not for a call that runs on the rank's core itself: run_on_cores).
  void begin_transfer(Slot s, bool slows_compute = true);
  void nccl_change(int rank, int delta);
  void finish_analytical(uint32_t c);
  // SimulationOptions::collective_costs's price for `op` over `members` (a model must be
  // set), uncached; nothing for a group of mixed devices.
  std::optional<CollectiveCost> price_measured(CollectiveOp op, const std::vector<int>& members,
                                               Bytes bytes) const;
  // The call's time by SimulationOptions::collective_costs, cached; nothing when that model
  // does not price it (or there is none).
  std::optional<CollectiveCost> measured_time(const CollectiveCall& call);
  // The same for one pipeline send/recv of `bytes` from rank `src` to `dst`: a send/recv
  // call over the pair.
  std::optional<CollectiveCost> measured_p2p(int src, int dst, Bytes bytes);
  // Ends collective `c` `duration` from now, recorded with `algorithm`.
  void finish_after(uint32_t c, CollectiveAlgorithm algorithm, Duration duration);
  // Runs collective `c` as `duration` of work on every member's device (compute_), sharing
  // it with the kernels there; it ends when the last member's part does.
  void run_on_cores(uint32_t c, CollectiveAlgorithm algorithm, Duration duration);
  // Records collective `c` as ended now (`steps`: the rounds its plan ran; 0 for a call
  // timed as a whole) and finishes its members' tasks.
  void end_collective(uint32_t c, CollectiveAlgorithm algorithm, int64_t steps);
  void start_collective(uint32_t c);
  void run_phase(uint32_t c, std::shared_ptr<const CollectivePlan> plan, size_t phase);
  void start_p2p(Slot send, Slot recv);
  void memory_change(Slot s, int64_t sign);
  // A call's plan, and the collective library's latency that precedes its transfers.
  struct PlannedCall {
    std::shared_ptr<const CollectivePlan> plan;
    Duration latency;
  };
  const PlannedCall& plan_for(const CollectiveCall& call);
  static PlannedCall plan_call(Simulation& sim, const CollectiveCall& call);
  std::vector<std::string> describe_stalled() const;

  Simulation& sim_;
  // Each send and the recv it meets, from validation until the constructor has given every
  // one its partner's slot (declared before graph_, which validation initializes).
  std::vector<TaskGraph::MessagePair> message_pairs_;
  const TaskGraph& graph_;
  std::vector<TaskState> state_;
  std::vector<Time> start_;  // by slot; kept only for observers (task records)
  // Dependents of each task in one flat array (slot -> [first_, first_ + 1) range):
  // millions of small vectors would cost an allocation each.
  std::vector<uint32_t> dependents_first_;
  std::vector<Slot> dependents_;
  std::vector<Stream> streams_;
  std::vector<Slot> stream_tasks_;  // every stream's tasks, stream after stream
  std::vector<RankClock> ranks_;
  std::vector<int> collective_arrived_;
  std::vector<std::vector<Slot>> collective_tasks_;
  std::vector<Time> collective_start_;
  // By call: the streams whose next transfer is one of its tasks; and the streams with a
  // transfer left. The flow model replays a phase of a call that nothing else can meet.
  std::vector<uint32_t> transfer_heads_;
  uint32_t streams_with_transfers_ = 0;
  // Calls run on their members' cores (run_on_cores), by call; empty until the first.
  std::vector<uint8_t> on_cores_;
  std::vector<int> cores_left_;
  // Calls alike in everything that prices them: op, algorithm, bytes, options, members.
  using CallKey = std::tuple<int, int, int64_t, int, int64_t, int, int, int, std::vector<int>>;
  static CallKey key_of(const CollectiveCall& call);
  std::map<CallKey, PlannedCall> plans_;
  std::map<CallKey, std::pair<CollectiveAlgorithm, Duration>> estimates_;
  std::map<CallKey, std::optional<CollectiveCost>>
      measured_;                                     // SimulationOptions::collective_costs
  using P2pCostKey = std::tuple<int, int, int64_t>;  // sender, receiver, bytes
  std::map<P2pCostKey, Duration> p2p_costs_;
  std::map<P2pCostKey, std::optional<CollectiveCost>> measured_p2p_;
  RunResult result_;
  size_t finished_ = 0;
};

}  // namespace dtsim
