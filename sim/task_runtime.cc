// TaskGraph execution on the simulated cluster.
#include "sim/task_runtime.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "sim/analytical_network.h"
#include "sim/check.h"
#include "sim/flow_network.h"
#include "sim/group_links.h"
#include "sim/link_stats.h"

namespace dtsim {

namespace {

// Loaders validate user graphs and report the problems; a graph that still breaks the
// invariants here (a lowering bug) stops the run with the first problem. Validated before
// the runtime's arrays exist: its lists of messages would come on top of them.
const TaskGraph& validated(const TaskGraph& graph, int ranks,
                           std::vector<TaskGraph::MessagePair>& pairs) {
  const auto errors = graph.validate(ranks, &pairs);
  DTSIM_CHECK(errors.empty(),
              ("invalid TaskGraph: " + (errors.empty() ? std::string() : errors.front())).c_str());
  return graph;
}

}  // namespace

TaskRuntime::TaskRuntime(Simulation& sim, const TaskGraph& graph)
    : sim_(sim),
      graph_(validated(graph, sim.cluster().num_ranks(), message_pairs_)),
      state_(graph.tasks().size()),
      dependents_first_(graph.tasks().size() + 1, 0),
      streams_(static_cast<size_t>(sim.cluster().num_ranks()) *
               std::max<size_t>(1, graph.streams().size())),
      ranks_(sim.cluster().num_ranks()),
      collective_arrived_(graph.collectives().size(), 0),
      collective_tasks_(graph.collectives().size()),
      collective_start_(graph.collectives().size()),
      transfer_heads_(graph.collectives().size(), 0) {
  if (graph.has_crowding()) {
    // Which ranks crowd one another's kernels: those of a node, or every one.
    std::vector<int> cpu_of(static_cast<size_t>(sim.cluster().num_ranks()), 0);
    if (!sim.ranks_share_one_cpu_) {
      for (size_t r = 0; r < cpu_of.size(); ++r) cpu_of[r] = sim.cluster().devices[r].node;
    }
    sim.compute_.set_cpus(cpu_of);
  }
  // Slots: the k-th task of every rank, rank by rank, for k = 0, 1, ... (see Slot).
  const size_t n = graph.tasks().size();
  const int num_ranks = sim.cluster().num_ranks();
  std::vector<uint32_t> rank_first(num_ranks + 1, 0);
  // Every pass reads the graph in order: a rank stored once is found without a search.
  for (const TaskView t : graph.tasks()) ++rank_first[t.rank + 1];
  for (int r = 0; r < num_ranks; ++r) rank_first[r + 1] += rank_first[r];
  std::vector<TaskId> by_rank(n);
  {
    std::vector<uint32_t> fill(rank_first.begin(), rank_first.end() - 1);
    TaskId id = 0;
    for (const TaskView t : graph.tasks()) by_rank[fill[t.rank]++] = id++;
  }
  std::vector<Slot> slot_of(n);
  // The ranks that still have a k-th task: one rank with many more tasks than the others
  // (a parameter server) must not cost a pass over every rank for each of them.
  std::vector<int> active;
  for (int r = 0; r < num_ranks; ++r) {
    if (rank_first[r + 1] > rank_first[r]) active.push_back(r);
  }
  Slot next = 0;
  for (uint32_t k = 0; !active.empty(); ++k) {
    size_t kept = 0;
    for (const int r : active) {
      const TaskId id = by_rank[rank_first[r] + k];
      slot_of[id] = next;
      state_[next++].graph_id = id;
      if (rank_first[r] + k + 1 < rank_first[r + 1]) active[kept++] = r;
    }
    active.resize(kept);
  }
  by_rank = {};
  // In the graph's order: the graph is read in sequence, and the slots written to,
  // scattered in that order, are fetched ahead.
  constexpr TaskId kAhead = 16;
  size_t messages = 0;  // sends and recvs
  auto in_order = graph.tasks().begin();
  for (TaskId id = 0; id < n; ++id, ++in_order) {
    if (size_t{id} + kAhead < n) prefetch_state(slot_of[id + kAhead]);
    const TaskView t = *in_order;
    const Slot slot = slot_of[id];
    TaskState& st = state_[slot];
    st.deps_left = static_cast<uint32_t>(t.deps.size());  // TaskGraph::add bounds it
    st.stream = stream_index(t);
    st.kind = t.kind;
    if (t.kind == TaskKind::kCollective) st.call_or_partner = t.collective;
    if (t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv) ++messages;
    if (t.kind == TaskKind::kCompute) {
      const ClusterDevice& dev = sim.cluster().devices[t.rank];
      st.ns_or_bytes =
          (dev.speed == 1 ? t.duration
                          : ceil_ns(static_cast<double>(t.duration.count_ns()) / dev.speed))
              .count_ns();
    } else {
      st.ns_or_bytes = t.bytes.count();
    }
    for (TaskId d : t.deps) ++dependents_first_[slot_of[d] + 1];
    ++streams_[st.stream].end;  // a count for now
  }
  // Each send and recv learns the slot of the task it meets, so that matching them at run
  // time costs no search.
  for (size_t i = 0; i < message_pairs_.size(); ++i) {
    if (i + kAhead < message_pairs_.size()) {
      prefetch_state(slot_of[message_pairs_[i + kAhead].send]);
      prefetch_state(slot_of[message_pairs_[i + kAhead].recv]);
    }
    const Slot send = slot_of[message_pairs_[i].send], recv = slot_of[message_pairs_[i].recv];
    state_[send].call_or_partner = recv;
    state_[recv].call_or_partner = send;
  }
  // Validation refuses a key sent more or less often than it is received: every send and
  // recv has its partner, none is left to meet slot 0.
  DTSIM_CHECK(2 * message_pairs_.size() == messages, "a send or recv without the task it meets");
  message_pairs_ = {};
  for (size_t i = 1; i < dependents_first_.size(); ++i)
    dependents_first_[i] += dependents_first_[i - 1];
  dependents_.resize(dependents_first_.back());
  // One array for every stream's queue: counted above, laid out, then filled in the
  // graph's order, as are the dependents.
  const size_t per_rank = std::max<size_t>(1, graph.streams().size());
  for (size_t i = 0; i < streams_.size(); ++i) streams_[i].rank = static_cast<int>(i / per_rank);
  uint32_t at = 0;
  for (Stream& s : streams_) {
    s.first = s.head = at;
    at += s.end;
    s.end = s.first;
  }
  stream_tasks_.resize(at);
  // Each slot's first entry serves as its cursor while the lists fill, and ends as the next
  // slot's first: shifted back by one afterwards, the index needs no copy of its own.
  in_order = graph.tasks().begin();
  for (TaskId id = 0; id < n; ++id, ++in_order) {
    const TaskView t = *in_order;
    const Slot slot = slot_of[id];
    for (TaskId d : t.deps) dependents_[dependents_first_[slot_of[d]]++] = slot;
    stream_tasks_[streams_[stream_index(t)].end++] = slot;
  }
  for (size_t i = dependents_first_.size() - 1; i > 0; --i)
    dependents_first_[i] = dependents_first_[i - 1];
  dependents_first_[0] = 0;
  for (Stream& s : streams_) {
    s.next_transfer = s.end;
    advance_transfer(s, s.first, nullptr);
  }
  if (!sim.observers_.empty()) start_.resize(n);
  for (int r = 0; r < sim.cluster().num_ranks(); ++r) {
    ranks_[r].stats.memory_capacity = sim.cluster().devices[r].spec->memory_capacity;
  }
}

double TaskRuntime::peak_bytes_for(const TaskGraphCounts& c, int ranks, size_t streams,
                                   bool observed) {
  const double n = c.tasks, calls = c.collectives;
  // From the start: the tasks' state and dependents' index, the calls' rendezvous (count,
  // member slots, start), the ranks' clocks and streams.
  const double first =
      n * (sizeof(TaskState) + sizeof(uint32_t)) +
      calls * (sizeof(int) + sizeof(std::vector<Slot>) + sizeof(Time) + sizeof(uint32_t)) +
      static_cast<double>(ranks) *
          (sizeof(RankClock) + sizeof(RankStats) +
           static_cast<double>(std::max<size_t>(1, streams)) * sizeof(Stream));
  // Then: the dependents, every stream's queue and, with observers, each task's start.
  const double laid_out =
      c.dependencies * sizeof(Slot) + n * sizeof(Slot) + (observed ? n * sizeof(Time) : 0);
  // Validation, before any of that, sorts the messages and lists every call's ranks, and
  // pairs each send with its recv; the constructor holds each task's slot and, while it
  // numbers them, the tasks by rank and those pairs, and then the slot while it lays out; a
  // run keeps the member slots of the calls that began and a record of each call.
  const double pairs = c.messages / 2 * sizeof(TaskGraph::MessagePair);
  const double validating = c.messages * 16 + pairs + calls * sizeof(std::vector<int>) +
                            c.collective_members * sizeof(int);
  const double laying_out =
      std::max(2 * n * sizeof(uint32_t) + pairs, laid_out + n * sizeof(uint32_t));
  const double running =
      laid_out + c.collective_members * sizeof(Slot) + calls * sizeof(CollectiveRecord);
  return std::max(validating, first + std::max(laying_out, running));
}

RunResult TaskRuntime::run(const RunControl& control) {
  // Issue every stream's first task whose dependencies are already met.
  for (Stream& s : streams_) {
    if (!s.empty()) try_issue(stream_tasks_[s.first]);
  }
  Engine& engine = sim_.engine_;
  const auto total = static_cast<int64_t>(graph_.num_tasks());
  const auto poll = [&] {
    control.report("simulation", static_cast<int64_t>(finished_), total);
    return control.stop_requested();
  };
  const bool polled = control.progress || control.stop.stop_possible();
  const Time end = engine.run(Time::infinite(), polled ? std::function<bool()>(poll) : nullptr,
                              static_cast<uint64_t>(std::max<int64_t>(1, control.check_every)));
  result_.cancelled = engine.stopped();
  sim_.network_->finish(end);
  result_.end = end;
  result_.events = engine.events_processed();
  result_.fast_forwarded_rounds = sim_.network_->fast_forwarded_rounds();
  result_.replayed_phases = sim_.network_->replayed_phases();
  result_.max_min = sim_.network_->max_min_counts();
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
    account(r, TimeCategory::kNone, 0);  // close the last interval, stalled tasks included
    result_.ranks.push_back(ranks_[r].stats);
  }
  if (!result_.cancelled) result_.stalled = describe_stalled();
  return result_;
}

// What a running task keeps its rank doing. Rendezvous tasks (collective, send, recv)
// count as waiting from issue until their peers arrive, then as communication.
TaskRuntime::TimeCategory TaskRuntime::activity_of(Slot s) const {
  switch (state_[s].kind) {
    case TaskKind::kCompute:
      return TimeCategory::kCompute;
    case TaskKind::kMemcpy:
      return view(s).memcpy_kind == MemcpyKind::kDeviceToDevice ? TimeCategory::kCompute
                                                                : TimeCategory::kCommunication;
    case TaskKind::kCollective:
    case TaskKind::kSend:
    case TaskKind::kRecv:
      return TimeCategory::kCommunication;
    case TaskKind::kAlloc:
    case TaskKind::kFree:
      return TimeCategory::kNone;
  }
  return TimeCategory::kNone;
}

void TaskRuntime::account(int rank, TimeCategory activity, int delta) {
  RankClock& rc = ranks_[rank];
  const Time now = sim_.engine_.now();
  const Duration dt = now - rc.last;
  if (rc.compute_running > 0) rc.stats.compute += dt;
  if (rc.comm_running > 0) rc.stats.communication += dt;
  if (rc.compute_running == 0) {
    if (rc.comm_running > 0) {
      rc.stats.exposed_communication += dt;
    } else if (rc.waiting > 0 || rc.waiting_p2p > 0) {
      rc.stats.waiting += dt;
      if (rc.waiting == 0) rc.stats.waiting_p2p += dt;
    } else {
      rc.stats.idle += dt;
    }
  }
  rc.last = now;
  switch (activity) {
    case TimeCategory::kCompute:
      rc.compute_running += delta;
      break;
    case TimeCategory::kCommunication:
      rc.comm_running += delta;
      break;
    case TimeCategory::kCollectiveWait:
      rc.waiting += delta;
      break;
    case TimeCategory::kPeerWait:
      rc.waiting_p2p += delta;
      break;
    case TimeCategory::kNone:
      break;
  }
}

void TaskRuntime::try_issue(Slot id) {
  const TaskState& st = state_[id];
  if (st.deps_left > 0) return;
  // Only its stream's head may start, and only while the stream runs nothing (so a task
  // that started is the head of a busy stream until it ends, and then behind the head).
  Stream& s = streams_[st.stream];
  if (s.busy) return;
  if (s.done() || stream_tasks_[s.head] != id) return;
  s.busy = true;
  // Its finish will read the stream's next task and its own dependents: fetch them while
  // it runs (in memory the tasks of one rank lie far apart, see Slot).
  if (s.head + 1 < s.end) prefetch_state(stream_tasks_[s.head + 1]);
  __builtin_prefetch(dependents_.data() + dependents_first_[id]);
  issue(id);
}

void TaskRuntime::issue(Slot id) {
  TaskState& t = state_[id];
  const int rank = rank_of(id);
  if (!start_.empty()) start_[id] = sim_.engine_.now();
  const bool p2p = t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv;
  account(rank,
          p2p                               ? TimeCategory::kPeerWait
          : t.kind == TaskKind::kCollective ? TimeCategory::kCollectiveWait
                                            : activity_of(id),
          +1);
  switch (t.kind) {
    case TaskKind::kCompute:
      sim_.compute_.start(rank, Duration::ns(t.ns_or_bytes), [this, id] { finish(id); },
                          graph_.crowding(state_[id].graph_id));
      break;
    case TaskKind::kCollective: {
      collective_tasks_[t.call_or_partner].push_back(id);
      const auto& call = graph_.collectives()[t.call_or_partner];
      if (++collective_arrived_[t.call_or_partner] == static_cast<int>(call.members.size())) {
        start_collective(t.call_or_partner);
      }
      break;
    }
    case TaskKind::kSend:
    case TaskKind::kRecv: {
      // The later of the two starts the transfer.
      const Slot other = t.call_or_partner;
      if (state_[other].arrived) {
        const bool send = t.kind == TaskKind::kSend;
        start_p2p(send ? id : other, send ? other : id);
      } else {
        t.arrived = true;
      }
      break;
    }
    case TaskKind::kMemcpy: {
      const TaskView m = view(id);
      const ClusterDevice& dev = sim_.cluster().devices[m.rank];
      const ClusterNode& node = sim_.cluster().nodes[dev.node];
      FlowSpec flow{dev.vertex, dev.vertex, m.bytes};
      switch (m.memcpy_kind) {
        case MemcpyKind::kHostToDevice:
          flow.src = node.host;
          break;
        case MemcpyKind::kDeviceToHost:
          flow.dst = node.host;
          break;
        case MemcpyKind::kPeer:
          flow.dst = sim_.cluster().devices[m.peer].vertex;
          break;
        case MemcpyKind::kDeviceToDevice: {
          // Reads and writes device memory: twice the bytes through HBM.
          const Duration d = Bytes(2 * m.bytes.count()) / dev.spec->memory_bandwidth;
          sim_.engine_.schedule_after(d, [this, id] { finish(id); });
          return;
        }
      }
      sim_.network_->start_group({flow}, 1, [this, id] { finish(id); });
      break;
    }
    case TaskKind::kAlloc:
    case TaskKind::kFree:
      memory_change(id, t.kind == TaskKind::kAlloc ? 1 : -1);
      finish_later(id);
      break;
  }
}

void TaskRuntime::memory_change(Slot id, int64_t sign) {
  const TaskState& t = state_[id];
  const int rank = rank_of(id);
  RankClock& rc = ranks_[rank];
  rc.memory_in_use += Bytes(sign * t.ns_or_bytes);
  rc.stats.peak_memory = std::max(rc.stats.peak_memory, rc.memory_in_use);
  if (rc.memory_in_use > rc.stats.memory_capacity && !rc.stats.out_of_memory) {
    rc.stats.out_of_memory = true;
    const MemoryOverflowRecord rec{rank, t.graph_id, rc.memory_in_use, rc.stats.memory_capacity,
                                   sim_.engine_.now()};
    result_.memory_overflows.push_back(rec);
    sim_.observers_.memory_overflow(rec);
  }
}

// Instant tasks finish through an event at the same instant, so that long chains of them
// do not recurse.
void TaskRuntime::finish_later(Slot id) {
  sim_.engine_.schedule_after(Duration::zero(), [this, id] { finish(id); });
}

void TaskRuntime::advance_transfer(Stream& s, uint32_t from, const TaskState* was) {
  if (was != nullptr) {
    if (was->kind == TaskKind::kCollective) --transfer_heads_[was->call_or_partner];
    --streams_with_transfers_;
  }
  uint32_t i = from;
  while (i < s.end && !is_transfer(state_[stream_tasks_[i]])) ++i;
  s.next_transfer = i;
  if (i < s.end) {
    const TaskState& next = state_[stream_tasks_[i]];
    if (next.kind == TaskKind::kCollective) ++transfer_heads_[next.call_or_partner];
    ++streams_with_transfers_;
  }
}

void TaskRuntime::finish(Slot id) {
  const TaskState& st = state_[id];
  ++finished_;
  if (is_transfer(st)) {
    Stream& s = streams_[st.stream];
    // A stream runs its tasks in order: the transfer that ends is its next one.
    DTSIM_CHECK(s.next_transfer == s.head, "a transfer ended before the one ahead of it");
    advance_transfer(s, s.head + 1, &st);
  }
  const int rank = rank_of(id);
  account(rank, activity_of(id), -1);
  const bool on_cores =
      st.kind == TaskKind::kCollective && !on_cores_.empty() && on_cores_[st.call_or_partner];
  if ((st.kind == TaskKind::kCollective && !on_cores) || st.kind == TaskKind::kSend ||
      st.kind == TaskKind::kRecv) {
    nccl_change(rank, -1);
  }
  ++ranks_[rank].stats.tasks;
  // start_ exists when observers did as the run began (see the constructor).
  if (!start_.empty() && !sim_.observers_.empty()) {
    const TaskView t = view(id);
    sim_.observers_.task(TaskRecord{st.graph_id, t.rank, graph_.streams()[t.stream], t.name, t.kind,
                                    start_[id], sim_.engine_.now()});
  }
  Stream& s = streams_[st.stream];
  s.busy = false;
  ++s.head;
  for (uint32_t i = dependents_first_[id]; i < dependents_first_[id + 1]; ++i) {
    const Slot d = dependents_[i];
    --state_[d].deps_left;
    try_issue(d);
  }
  if (!s.done()) try_issue(stream_tasks_[s.head]);
}

TaskRuntime::CallKey TaskRuntime::key_of(const CollectiveCall& call) {
  const CollectiveOptions& o = call.options;
  return {static_cast<int>(call.op),
          static_cast<int>(call.algorithm),
          call.bytes.count(),
          call.call_count(),
          o.chunk_bytes.count(),
          o.torus_x,
          o.torus_y,
          o.root,
          call.members};
}

const TaskRuntime::PlannedCall& TaskRuntime::plan_for(const CollectiveCall& call) {
  CallKey key = key_of(call);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  return plans_.emplace(std::move(key), plan_call(sim_, call)).first->second;
}

TaskRuntime::PlannedCall TaskRuntime::plan_call(Simulation& sim, const CollectiveCall& call) {
  const auto& o = call.options;
  const GroupLayout layout = sim.layout_of(call.members);
  const bool moves = call.members.size() > 1 && call.bytes.count() > 0;
  const AlphaBeta ab = moves ? sim.alpha_beta(layout) : AlphaBeta{};
  CollectiveAlgorithm algorithm = call.algorithm;
  const Bytes one = call.bytes_per_call();
  if (algorithm == CollectiveAlgorithm::kAuto) {
    algorithm = call.members.size() <= 1 ? algorithms_for(call.op).front()
                                         : choose_algorithm(call.op, layout, one, o, ab);
  }
  // The flows move all the calls' bytes; each call pays its protocol's latency.
  PlannedCall planned{std::make_shared<const CollectivePlan>(
                          plan_collective(call.op, algorithm, layout, call.bytes, o)),
                      Duration::zero()};
  if (moves) {
    // The protocol is chosen on the alpha-beta estimate, as NCCL chooses on its model.
    planned.latency = protocol_cost(call.op, algorithm, layout, one, o, ab) * call.call_count();
  }
  return planned;
}

double TaskRuntime::network_bytes_for(Simulation& sim, const TaskGraph* graph) {
  const double links = static_cast<double>(sim.cluster().topology.num_links());
  double bytes = links * LinkStatsTable::bytes_per_link();
  const bool flow = sim.network().name() == "flow";
  const bool analytical = sim.network().name() == "analytical";
  const bool whole_plans = sim.network().runs_whole_plans();
  const bool replays = sim.network().phase_replay() && !sim.network().link_stats().observed();
  if (graph == nullptr) return bytes + (flow ? FlowNetworkModel::bytes_for(links, 0, 0) : 0);
  // Every call the network carries is planned once per distinct key, and the plan is kept
  // for the run (plans_); its phases' flows are what the model holds at once.
  constexpr double kMapNode = 48;  // a tree or hash node's own bytes, before its value
  std::set<CallKey> seen;
  std::unordered_map<uint64_t, uint32_t> route_length;  // by (src, dst) vertex pair
  double plans = 0, routes = 0, max_flows = 0, max_crossings = 0;
  const auto& devices = sim.cluster().devices;
  for (const CollectiveCall& call : graph->collectives()) {
    if (call.analytical || call.members.size() <= 1 || call.bytes.count() <= 0) continue;
    CallKey key = key_of(call);
    if (!seen.insert(key).second) continue;
    const PlannedCall planned = plan_call(sim, call);
    const CollectivePlan& p = *planned.plan;
    plans += kMapNode + sizeof(CallKey) + sizeof(PlannedCall) + sizeof(CollectivePlan) +
             static_cast<double>(2 * call.members.size() * sizeof(int)) +
             static_cast<double>(p.phases.capacity() * sizeof(Phase));
    double plan_crossings = 0;
    for (const Phase& phase : p.phases) {
      plans += static_cast<double>(phase.transfers.capacity() * sizeof(Transfer));
      double crossings = 0;
      for (const Transfer& t : phase.transfers) {
        const VertexId a = devices[t.src].vertex, b = devices[t.dst].vertex;
        const uint64_t pair = PairMap<uint32_t>::key(a, b);
        auto [it, fresh] = route_length.try_emplace(pair, 0);
        if (fresh) {
          it->second = static_cast<uint32_t>(sim.router().route(a, b).size());
          routes += Router::route_entry_bytes() + it->second * sizeof(LinkId) +
                    (analytical ? AnalyticalNetworkModel::route_bytes() : 0);
        }
        crossings += it->second;
      }
      max_flows = std::max(max_flows, static_cast<double>(phase.transfers.size()));
      max_crossings = std::max(max_crossings, crossings);
      plan_crossings += crossings;
      // The analytical model keeps each phase it priced for the run, or each whole plan.
      if (analytical && !whole_plans) plans += AnalyticalNetworkModel::phase_bytes_for(crossings);
      // The flow model may keep what a closed run of each phase did, to replay it.
      if (flow && replays) plans += FlowNetworkModel::phase_outcome_bytes_for(crossings);
    }
    if (whole_plans) {
      plans += AnalyticalNetworkModel::plan_bytes_for(static_cast<double>(p.phases.size()),
                                                      plan_crossings);
    }
  }
  return bytes + plans + routes +
         (flow ? FlowNetworkModel::bytes_for(links, max_flows, max_crossings)
               : AnalyticalNetworkModel::pricing_bytes_for(links) +
                     static_cast<double>(max_crossings * sizeof(AnalyticalNetworkModel::LinkLoad)));
}

// A rendezvous is complete: the task stops waiting and starts communicating.
void TaskRuntime::begin_transfer(Slot id, bool slows_compute) {
  const TaskState& t = state_[id];
  const int rank = rank_of(id);
  account(rank,
          t.kind == TaskKind::kCollective ? TimeCategory::kCollectiveWait : TimeCategory::kPeerWait,
          -1);
  account(rank, TimeCategory::kCommunication, +1);
  if (slows_compute) nccl_change(rank, +1);
}

// Communication kernels take SMs and memory bandwidth from the rank's compute while any
// of them runs.
void TaskRuntime::nccl_change(int rank, int delta) {
  RankClock& rc = ranks_[rank];
  const bool was = rc.nccl_running > 0;
  rc.nccl_running += delta;
  if (was != (rc.nccl_running > 0)) {
    const double slowdown = sim_.cluster().devices[rank].spec->efficiency.comm_compute_slowdown;
    if (slowdown > 0) sim_.compute_.set_speed(rank, rc.nccl_running > 0 ? 1.0 - slowdown : 1.0);
  }
}

void TaskRuntime::start_collective(uint32_t c) {
  collective_start_[c] = sim_.engine_.now();
  const CollectiveCall& call = graph_.collectives()[c];
  const std::optional<CollectiveCost> measured = measured_time(call);
  // A measured call among CPU ranks moves its bytes with their cores: shared-memory MPI
  // copies on the calling thread and spins while it waits, so each member's core is busy
  // for the call's measured time and shares itself with the kernels that run meanwhile.
  const bool on_cores =
      measured && std::all_of(call.members.begin(), call.members.end(), [&](int r) {
        return sim_.cluster().devices[static_cast<size_t>(r)].spec->kind == DeviceKind::kCpu;
      });
  if (on_cores) {
    if (on_cores_.empty()) on_cores_.assign(graph_.collectives().size(), 0);
    on_cores_[c] = 1;
  }
  for (Slot id : collective_tasks_[c]) begin_transfer(id, !on_cores);
  if (measured) {
    ++result_.priced_collectives[static_cast<size_t>(measured->source)];
    if (on_cores) {
      run_on_cores(c, call.algorithm, measured->time);
    } else {
      finish_after(c, call.algorithm, measured->time);
    }
    return;
  }
  ++result_.network_collectives;
  if (call.analytical) {
    finish_analytical(c);
    return;
  }
  const PlannedCall& planned = plan_for(graph_.collectives()[c]);
  if (planned.plan->phases.empty() || planned.latency > Duration::zero()) {
    // The library's latency comes first. With nothing to move (one member, or zero bytes)
    // the call still finishes through an event, so that long chains of them do not recurse.
    sim_.engine_.schedule_after(planned.latency,
                                [this, c, plan = planned.plan] { run_phase(c, plan, 0); });
    return;
  }
  run_phase(c, planned.plan, 0);
}

void TaskRuntime::run_phase(uint32_t c, std::shared_ptr<const CollectivePlan> plan, size_t phase) {
  if (phase == plan->phases.size()) {
    int64_t steps = 0;
    for (const Phase& p : plan->phases) steps += p.repeat;
    end_collective(c, plan->algorithm, steps);
    return;
  }
  // By value: a model may keep it to make the flows later (the flow model's replay).
  const auto flows_of = [this, plan](size_t i) {
    const Phase& p = plan->phases[i];
    std::vector<FlowSpec> out;
    out.reserve(p.transfers.size());
    const auto& devices = sim_.cluster().devices;
    for (const Transfer& tr : p.transfers) {
      out.push_back(FlowSpec{devices[tr.src].vertex, devices[tr.dst].vertex, tr.bytes});
    }
    return out;
  };
  if (phase == 0 && sim_.network_->runs_whole_plans()) {
    const size_t end = plan->phases.size();
    sim_.network_->start_plan(plan, flows_of, [this, c, plan, end] { run_phase(c, plan, end); });
    return;
  }
  sim_.network_->start_phase(
      plan, phase, [flows_of, phase] { return flows_of(phase); }, plan->phases[phase].repeat,
      only_call_can_transfer(c), [this, c, plan, phase] { run_phase(c, plan, phase + 1); });
}

std::optional<CollectiveCost> TaskRuntime::price_measured(CollectiveOp op,
                                                          const std::vector<int>& members,
                                                          Bytes bytes) const {
  // A measurement is of one device kind: a group of mixed devices is the network's.
  const auto& devices = sim_.cluster().devices;
  const DeviceSpec* spec = devices[static_cast<size_t>(members.front())].spec;
  for (int m : members) {
    if (devices[static_cast<size_t>(m)].spec->name != spec->name) return std::nullopt;
  }
  return sim_.collective_costs_->price(op, sim_.layout_of(members), *spec, bytes);
}

std::optional<CollectiveCost> TaskRuntime::measured_time(const CollectiveCall& call) {
  if (sim_.collective_costs_ == nullptr || call.members.empty()) return std::nullopt;
  CallKey key = key_of(call);
  if (const auto it = measured_.find(key); it != measured_.end()) return it->second;
  std::optional<CollectiveCost> cost = price_measured(call.op, call.members, call.bytes_per_call());
  if (cost) cost->time = cost->time * call.call_count();
  measured_.emplace(std::move(key), cost);
  return cost;
}

std::optional<CollectiveCost> TaskRuntime::measured_p2p(int src, int dst, Bytes bytes) {
  if (sim_.collective_costs_ == nullptr) return std::nullopt;
  const P2pCostKey key{src, dst, bytes.count()};
  if (const auto it = measured_p2p_.find(key); it != measured_p2p_.end()) return it->second;
  const std::optional<CollectiveCost> cost =
      price_measured(CollectiveOp::kSendRecv, {src, dst}, bytes);
  measured_p2p_.emplace(key, cost);
  return cost;
}

void TaskRuntime::finish_analytical(uint32_t c) {
  const CollectiveCall& call = graph_.collectives()[c];
  CallKey key = key_of(call);
  auto it = estimates_.find(key);
  if (it == estimates_.end()) {
    const GroupCallEstimate e =
        estimate_group_call(sim_.cluster(), sim_.router_, call.op, call.algorithm, call.members,
                            call.bytes_per_call(), call.options);
    it = estimates_.emplace(std::move(key), std::pair{e.algorithm, e.time * call.call_count()})
             .first;
  }
  const auto [algorithm, duration] = it->second;
  finish_after(c, algorithm, duration);
}

void TaskRuntime::finish_after(uint32_t c, CollectiveAlgorithm algorithm, Duration duration) {
  sim_.engine_.schedule_after(duration, [this, c, algorithm] { end_collective(c, algorithm, 0); });
}

void TaskRuntime::run_on_cores(uint32_t c, CollectiveAlgorithm algorithm, Duration duration) {
  if (cores_left_.empty()) cores_left_.assign(graph_.collectives().size(), 0);
  cores_left_[c] = static_cast<int>(collective_tasks_[c].size());
  for (Slot id : collective_tasks_[c]) {
    sim_.compute_.start(rank_of(id), duration, [this, c, algorithm] {
      // The call ends when the last member's core has done its part.
      if (--cores_left_[c] == 0) end_collective(c, algorithm, 0);
    });
  }
}

void TaskRuntime::end_collective(uint32_t c, CollectiveAlgorithm algorithm, int64_t steps) {
  const CollectiveCall& done = graph_.collectives()[c];
  CollectiveRecord rec{c,
                       done.label,
                       done.op,
                       algorithm,
                       done.bytes,
                       static_cast<int>(done.members.size()),
                       steps,
                       collective_start_[c],
                       sim_.engine_.now(),
                       done.call_count()};
  result_.collectives.push_back(rec);
  sim_.observers_.collective(rec);
  for (Slot id : collective_tasks_[c]) finish(id);
}

void TaskRuntime::start_p2p(Slot send, Slot recv) {
  begin_transfer(send);
  begin_transfer(recv);
  const TaskState& s = state_[send];
  const int rank = rank_of(send);
  const int peer = rank_of(recv);
  const Bytes bytes(s.ns_or_bytes);
  if (const std::optional<CollectiveCost> measured = measured_p2p(rank, peer, bytes)) {
    // A send/recv like the measured ones takes the measured time, as collectives do.
    ++result_.priced_collectives[static_cast<size_t>(measured->source)];
    sim_.engine_.schedule_after(measured->time, [this, send, recv] {
      finish(send);
      finish(recv);
    });
    return;
  }
  ++result_.network_collectives;
  const auto& devices = sim_.cluster().devices;
  const ClusterDevice& from = devices[rank];
  const ClusterDevice& to = devices[peer];
  // Pipelines send the same message between the same ranks hundreds of times.
  const P2pCostKey cost_key{rank, peer, s.ns_or_bytes};
  auto cost = p2p_costs_.find(cost_key);
  if (cost == p2p_costs_.end()) {
    cost = p2p_costs_.emplace(cost_key, sim_.p2p_protocol_cost(rank, peer, bytes)).first;
  }
  const Duration latency = cost->second;
  auto transfer = [this, send, recv, src = from.vertex, dst = to.vertex, bytes] {
    sim_.network_->start_group({FlowSpec{src, dst, bytes}}, 1, [this, send, recv] {
      finish(send);
      finish(recv);
    });
  };
  if (latency > Duration::zero()) {
    sim_.engine_.schedule_after(latency, std::move(transfer));
  } else {
    transfer();
  }
}

std::vector<std::string> TaskRuntime::describe_stalled() const {
  std::vector<std::string> out;
  if (finished_ == graph_.tasks().size()) return out;
  // Where each task stands, from its stream: those before the head ended, the head of a
  // busy stream started.
  enum class Stage : uint8_t { kWaiting, kStarted, kEnded };
  std::vector<Stage> stage(state_.size(), Stage::kWaiting);
  for (const Stream& s : streams_) {
    for (uint32_t i = s.first; i < s.end; ++i) {
      stage[stream_tasks_[i]] = i < s.head              ? Stage::kEnded
                                : i == s.head && s.busy ? Stage::kStarted
                                                        : Stage::kWaiting;
    }
  }
  // In the graph's order, so that the first stalled tasks are reported.
  std::vector<Slot> slot_of(state_.size());
  for (Slot s = 0; s < state_.size(); ++s) slot_of[state_[s].graph_id] = s;
  for (TaskId gid = 0; gid < graph_.tasks().size() && out.size() < 20; ++gid) {
    const Slot id = slot_of[gid];
    if (stage[id] == Stage::kEnded) continue;
    const TaskView t = graph_.task(gid);
    std::string why;
    if (stage[id] == Stage::kWaiting) {
      why = state_[id].deps_left > 0
                ? "waits for " + std::to_string(state_[id].deps_left) + " unfinished dependencies"
                : "waits for earlier tasks on its stream";
    } else if (t.kind == TaskKind::kCollective) {
      why = "waits in collective \"" + graph_.collectives()[t.collective].label + "\" (" +
            std::to_string(collective_arrived_[t.collective]) + " of " +
            std::to_string(graph_.collectives()[t.collective].members.size()) + " members arrived)";
    } else if (t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv) {
      why = "waits for its matching " + std::string(t.kind == TaskKind::kSend ? "recv" : "send") +
            " on rank " + std::to_string(t.peer);
    } else {
      why = "started but never finished";
    }
    out.push_back("task " + std::to_string(gid) + " (\"" + std::string(t.name) + "\", rank " +
                  std::to_string(t.rank) + ") " + why);
  }
  const size_t left = graph_.tasks().size() - finished_;
  if (left > out.size()) out.push_back("... " + std::to_string(left - out.size()) + " more");
  return out;
}

}  // namespace dtsim
