// The TaskGraph runtime: streams, dependencies, rendezvous, memcpy, memory, stalls, and
// per-rank accounting.
#include <gtest/gtest.h>

#include <stop_token>

#include "sim/simulation.h"
#include "tests/sim/test_clusters.h"

namespace dtsim {
namespace {

using testing::compute;
using testing::fabric;
using testing::node_group;
using testing::one_region;
using testing::two_h100;

struct Recorder : SimObserver {
  void on_task(const TaskRecord& r) override { tasks.push_back(r); }
  std::vector<TaskRecord> tasks;
  Time end_of(TaskId id) const {
    for (const auto& t : tasks) {
      if (t.task == id) return t.end;
    }
    return Time::infinite();
  }
};

TEST(TaskRuntime, OneStreamRunsInOrderAndStreamsShareTheDevice) {
  const Cluster c = two_h100();
  TaskGraph g;
  const uint16_t s0 = g.stream("compute"), s1 = g.stream("other");
  const TaskId a = g.add(compute(0, s0, Duration::ms(10)));
  const TaskId b = g.add(compute(0, s0, Duration::ms(10)));  // after a, same stream
  const TaskId x = g.add(compute(1, s0, Duration::ms(10)));  // rank 1, alone
  const TaskId y = g.add(compute(1, s1, Duration::ms(10)));  // rank 1, concurrent with x
  Simulation sim(c, {});
  Recorder rec;
  sim.add_observer(&rec);
  const RunResult r = sim.run(g);
  EXPECT_EQ(rec.end_of(a), Time::ms(10));
  EXPECT_EQ(rec.end_of(b), Time::ms(20));
  // x and y share rank 1's device: each at half speed, both end at 20 ms.
  EXPECT_EQ(rec.end_of(x), Time::ms(20));
  EXPECT_EQ(rec.end_of(y), Time::ms(20));
  EXPECT_EQ(r.end, Time::ms(20));
  EXPECT_TRUE(r.stalled.empty());
  EXPECT_EQ(r.ranks[0].compute, Duration::ms(20));
  EXPECT_EQ(r.ranks[1].compute, Duration::ms(20));
}

// Units of one model differ in speed: with speed_variation v each device runs at a speed
// drawn evenly from 1 +- v/2, the same for the same seed, and its compute takes 1/speed.
TEST(TaskRuntime, DeviceSpeedsSpreadAroundTheCatalogAndScaleCompute) {
  ClusterSpec spec = one_region(node_group(64, 8, "H100", 8), fabric(FabricKind::kSingleSwitch));
  spec.regions[0].node_groups[0].speed_variation = 0.08;
  const Cluster c = build_cluster(spec);
  double lo = 2, hi = 0, sum = 0;
  for (const ClusterDevice& d : c.devices) {
    lo = std::min(lo, d.speed);
    hi = std::max(hi, d.speed);
    sum += d.speed;
  }
  EXPECT_GE(lo, 0.96);
  EXPECT_LT(hi, 1.04);
  EXPECT_LT(lo, 0.962);  // 512 draws reach close to both ends
  EXPECT_GT(hi, 1.038);
  EXPECT_NEAR(sum / static_cast<double>(c.devices.size()), 1.0, 0.005);
  // Deterministic per seed; another seed, other speeds; no variation, all 1.
  const Cluster again = build_cluster(spec);
  spec.speed_seed = 2;
  const Cluster other = build_cluster(spec);
  spec.regions[0].node_groups[0].speed_variation = 0;
  const Cluster even = build_cluster(spec);
  int differ = 0;
  for (size_t i = 0; i < c.devices.size(); ++i) {
    EXPECT_EQ(c.devices[i].speed, again.devices[i].speed);
    differ += c.devices[i].speed != other.devices[i].speed;
    EXPECT_EQ(even.devices[i].speed, 1.0);
  }
  EXPECT_GT(differ, 500);

  TaskGraph g;
  const uint16_t s = g.stream("compute");
  std::vector<TaskId> ids;
  for (int r = 0; r < 4; ++r) ids.push_back(g.add(compute(r, s, Duration::ms(100))));
  Simulation sim(c, {});
  Recorder rec;
  sim.add_observer(&rec);
  sim.run(g);
  for (int r = 0; r < 4; ++r) {
    EXPECT_NEAR(rec.end_of(ids[r]).seconds(), 0.1 / c.devices[r].speed, 1e-9) << r;
  }
}

TEST(TaskRuntime, DependenciesCrossRanks) {
  const Cluster c = two_h100();
  TaskGraph g;
  const uint16_t s = g.stream("compute");
  const TaskId a = g.add(compute(0, s, Duration::ms(3)));
  const TaskId b = g.add(compute(1, s, Duration::ms(2), {a}));
  Simulation sim(c, {});
  Recorder rec;
  sim.add_observer(&rec);
  const RunResult r = sim.run(g);
  EXPECT_EQ(rec.end_of(b), Time::ms(5));
  EXPECT_EQ(r.ranks[1].idle, Duration::ms(3));
}

TEST(TaskRuntime, SendAndRecvMeetBeforeTheTransferStarts) {
  const Cluster c = two_h100();
  TaskGraph g;
  const uint16_t comp = g.stream("compute"), comm = g.stream("comm");
  const TaskId late = g.add(compute(1, comp, Duration::ms(1)));
  Task send;
  send.kind = TaskKind::kSend;
  send.rank = 0;
  send.stream = comm;
  send.peer = 1;
  send.bytes = Bytes(450'000'000);  // 1 ms over NVLink at 450 GB/s
  send.name = "send";
  const TaskId s = g.add(send);
  Task recv = send;
  recv.kind = TaskKind::kRecv;
  recv.rank = 1;
  recv.peer = 0;
  recv.deps = {late};
  recv.name = "recv";
  const TaskId rv = g.add(recv);
  Simulation sim(c, {});
  Recorder rec;
  sim.add_observer(&rec);
  const RunResult r = sim.run(g);
  // The recv is ready at 1 ms; then NCCL's latency for a call of one NVLink step (8.4 us
  // + 3.4 us, the catalog's H100 figures), 1 us of link latency (2 NVLink hops) and 1 ms of
  // data.
  const Time expected = Time::ms(2) + Duration::ns(8400 + 3400) + Duration::us(1);
  EXPECT_EQ(rec.end_of(s), expected);
  EXPECT_EQ(rec.end_of(rv), expected);
  // Rank 0 waited in its send until the recv was posted at 1 ms, then communicated with
  // nothing to overlap it; rank 1 computed, then communicated.
  EXPECT_EQ(r.ranks[0].waiting, Duration::ms(1));
  EXPECT_EQ(r.ranks[0].exposed_communication, expected - Time::ms(1));
  EXPECT_EQ(r.ranks[1].waiting, Duration::zero());
  EXPECT_EQ(r.ranks[1].exposed_communication, expected - Time::ms(1));
  for (const RankStats& st : r.ranks) {
    EXPECT_EQ(st.compute + st.exposed_communication + st.waiting + st.idle, r.end);
  }
}

// The k-th message from rank 0 to rank 1 on `stream`, of k + 1 times 450 MB (each pair of
// its own size, so that a recv that met another send would end when that one does), and
// the recv that meets it.
std::pair<Task, Task> kth_message(int k, uint16_t stream) {
  Task send;
  send.kind = TaskKind::kSend;
  send.rank = 0;
  send.peer = 1;
  send.stream = stream;
  send.bytes = Bytes(450'000'000LL * (k + 1));
  send.name = "send" + std::to_string(k);
  Task recv = send;
  recv.kind = TaskKind::kRecv;
  recv.rank = 1;
  recv.peer = 0;
  recv.name = "recv" + std::to_string(k);
  return {send, recv};
}

// Messages with the same sender, receiver and tag meet in the order they were added (here
// also the order they are posted), whichever side waits: three recvs posted before their sends,
// then three sends posted before their recvs, each pair of its own size, so that a recv that met
// the wrong send would end when another pair does.
TEST(TaskRuntime, MessagesOfOneKeyMeetOldestFirst) {
  const Cluster c = two_h100();
  for (const bool recvs_wait : {true, false}) {
    SCOPED_TRACE(recvs_wait ? "recvs posted first" : "sends posted first");
    TaskGraph g;
    const int waiting_rank = recvs_wait ? 1 : 0;
    const uint16_t comp = g.stream("compute");
    const uint16_t comm[] = {g.stream("comm0"), g.stream("comm1"), g.stream("comm2")};
    // The waiting side posts its k-th task after k ms of compute, the other side its k-th
    // after 3 + k ms (or later: a transfer slows the compute beside it), so that each
    // arrives after the one before it.
    std::vector<TaskId> waiting_after, other_after;
    for (int k = 0; k < 2; ++k) {
      waiting_after.push_back(g.add(compute(waiting_rank, comp, Duration::ms(1))));
    }
    other_after.push_back(g.add(compute(1 - waiting_rank, comp, Duration::ms(3))));
    for (int k = 1; k < 3; ++k) {
      other_after.push_back(g.add(compute(1 - waiting_rank, comp, Duration::ms(1))));
    }
    std::vector<TaskId> sends, recvs;
    for (int k = 0; k < 3; ++k) {
      auto [send, recv] = kth_message(k, comm[k]);
      Task& waiting = recvs_wait ? recv : send;
      Task& other = recvs_wait ? send : recv;
      if (k > 0) waiting.deps = {waiting_after[k - 1]};
      other.deps = {other_after[k]};
      sends.push_back(g.add(send));
      recvs.push_back(g.add(recv));
    }
    Simulation sim(c, {});
    Recorder rec;
    sim.add_observer(&rec);
    sim.run(g);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(rec.end_of(recvs[k]), rec.end_of(sends[k])) << "pair " << k;
      if (k > 0) {
        EXPECT_LT(rec.end_of(sends[k - 1]), rec.end_of(sends[k])) << "pair " << k;
      }
    }
  }
}

// Posting order is not id order here: the first send in id order waits 5 ms for its
// compute, the second is posted at once on a stream of its own. The n-th send of a key
// still meets the n-th recv (TaskGraph::MessagePair), which is what validation checks
// when it compares the tensors they move; meeting the first posted would pair the first
// recv with the second send, and move the second micro-batch into the first one's recv.
TEST(TaskRuntime, MessagesOfOneKeyMeetInIdOrderWhateverOrderTheyArePosted) {
  const Cluster c = two_h100();
  TaskGraph g;
  const uint16_t comp = g.stream("compute");
  const uint16_t comm[] = {g.stream("comm0"), g.stream("comm1")};
  const TaskId late = g.add(compute(0, comp, Duration::ms(5)));
  std::vector<TaskId> sends, recvs;
  for (int k = 0; k < 2; ++k) {
    auto [send, recv] = kth_message(k, comm[k]);
    send.transfer = recv.transfer =
        PipelineTransfer{PipelineTensor::kActivations, static_cast<uint32_t>(k), 0};
    if (k == 0) send.deps = {late};
    sends.push_back(g.add(send));
    recvs.push_back(g.add(recv));
  }
  ASSERT_TRUE(g.validate(2).empty());
  std::vector<TaskGraph::MessagePair> pairs;
  ASSERT_TRUE(g.validate(2, &pairs).empty());
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].send, sends[0]);
  EXPECT_EQ(pairs[0].recv, recvs[0]);
  EXPECT_EQ(pairs[1].send, sends[1]);
  EXPECT_EQ(pairs[1].recv, recvs[1]);
  Simulation sim(c, {});
  Recorder rec;
  sim.add_observer(&rec);
  const RunResult r = sim.run(g);
  ASSERT_TRUE(r.stalled.empty());
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(rec.end_of(recvs[k]), rec.end_of(sends[k])) << "pair " << k;
  }
  // The first pair moves only after its send's 5 ms of compute, the second from the start
  // (and the pairs end apart, so that a recv that met the other send would show).
  EXPECT_GT(rec.end_of(sends[0]), Time::ms(5));
  EXPECT_NE(rec.end_of(sends[0]), rec.end_of(sends[1]));
}

TEST(TaskRuntime, MemcpyFromHostCrossesPcie) {
  const Cluster c = two_h100();
  TaskGraph g;
  Task m;
  m.kind = TaskKind::kMemcpy;
  m.memcpy_kind = MemcpyKind::kHostToDevice;
  m.rank = 0;
  m.stream = g.stream("copy");
  m.bytes = Bytes(63'000'000);  // 1 ms at H100's PCIe Gen5 63 GB/s
  m.name = "h2d";
  g.add(m);
  m.memcpy_kind = MemcpyKind::kDeviceToDevice;  // 2 x 33.5 MB through 3.35 TB/s HBM = 20 us
  m.bytes = Bytes(33'500'000);
  m.name = "d2d";
  g.add(m);
  Simulation sim(c, {});
  Recorder rec;
  sim.add_observer(&rec);
  sim.run(g);
  // host -> rc (no latency, 100 GB/s) -> pcie0 -> gpu0: 2 PCIe hops of 500 ns.
  EXPECT_EQ(rec.end_of(0), Time::ms(1) + Duration::us(1));
  EXPECT_EQ(rec.end_of(1), Time::ms(1) + Duration::us(21));
}

TEST(TaskRuntime, MemoryOverflowIsReportedAndTheRunCompletes) {
  const Cluster c = two_h100();  // 80 GiB each
  TaskGraph g;
  const uint16_t s = g.stream("mem");
  auto mem = [&](TaskKind k, int64_t gib, const char* name) {
    Task t;
    t.kind = k;
    t.rank = 1;
    t.stream = s;
    t.bytes = GiB(gib);
    t.name = name;
    return g.add(t);
  };
  mem(TaskKind::kAlloc, 60, "weights");
  const TaskId act = mem(TaskKind::kAlloc, 30, "activations");
  mem(TaskKind::kFree, 30, "activations-free");
  mem(TaskKind::kAlloc, 10, "buffers");
  Simulation sim(c, {});
  const RunResult r = sim.run(g);
  EXPECT_TRUE(r.stalled.empty());
  ASSERT_EQ(r.memory_overflows.size(), 1u);
  EXPECT_EQ(r.memory_overflows[0].rank, 1);
  EXPECT_EQ(r.memory_overflows[0].task, act);
  EXPECT_EQ((r.memory_overflows[0].in_use - r.memory_overflows[0].capacity), GiB(10));
  EXPECT_TRUE(r.ranks[1].out_of_memory);
  EXPECT_FALSE(r.ranks[0].out_of_memory);
  EXPECT_EQ(r.ranks[1].peak_memory, GiB(90));
}

// Rank 0 runs a collective before X on stream `s`; rank 1 needs X before it can join the
// collective: neither can proceed. Returns rank 0's task, which waits for ever.
TaskId add_deadlock(TaskGraph& g, uint16_t s) {
  const uint32_t call = g.add_collective(CollectiveCall{
      CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {0, 1}, MiB(1), {}, "ar"});
  Task coll;
  coll.kind = TaskKind::kCollective;
  coll.collective = call;
  coll.stream = s;
  coll.rank = 0;
  coll.name = "ar";
  const TaskId waits = g.add(coll);
  const TaskId x = g.add(compute(0, s, Duration::ms(1)));
  coll.rank = 1;
  coll.deps = {x};
  g.add(coll);
  return waits;
}

TEST(TaskRuntime, ADeadlockIsReportedNotHung) {
  const Cluster c = two_h100();
  TaskGraph g;
  add_deadlock(g, g.stream("main"));
  Simulation sim(c, {});
  const RunResult r = sim.run(g);
  // Where each stalled task stands: rank 0's call started, its compute waits behind it on
  // the stream, and rank 1's call waits for that compute.
  ASSERT_EQ(r.stalled.size(), 3u);
  EXPECT_NE(
      r.stalled[0].find("(\"ar\", rank 0) waits in collective \"ar\" (1 of 2 members arrived)"),
      std::string::npos)
      << r.stalled[0];
  EXPECT_NE(r.stalled[1].find("rank 0) waits for earlier tasks on its stream"), std::string::npos)
      << r.stalled[1];
  EXPECT_NE(r.stalled[2].find("(\"ar\", rank 1) waits for 1 unfinished dependencies"),
            std::string::npos)
      << r.stalled[2];
}

// Each rank receives before it sends: both recvs wait for ever, each naming its peer (which
// the runtime reads in the graph), and the sends wait behind them.
TEST(TaskRuntime, RecvsThatWaitForEachOtherAreReportedWithTheirPeers) {
  const Cluster c = two_h100();
  TaskGraph g;
  const uint16_t s = g.stream("comm");
  for (int rank = 0; rank < 2; ++rank) {
    Task recv;
    recv.kind = TaskKind::kRecv;
    recv.rank = rank;
    recv.stream = s;
    recv.peer = 1 - rank;
    recv.bytes = MiB(1);
    recv.name = "recv";
    g.add(recv);
    Task send = recv;
    send.kind = TaskKind::kSend;
    send.name = "send";
    g.add(send);
  }
  Simulation sim(c, {});
  const RunResult r = sim.run(g);
  ASSERT_EQ(r.stalled.size(), 4u);
  EXPECT_EQ(r.stalled[0], "task 0 (\"recv\", rank 0) waits for its matching send on rank 1");
  EXPECT_EQ(r.stalled[1], "task 1 (\"send\", rank 0) waits for earlier tasks on its stream");
  EXPECT_EQ(r.stalled[2], "task 2 (\"recv\", rank 1) waits for its matching send on rank 0");
  EXPECT_EQ(r.stalled[3], "task 3 (\"send\", rank 1) waits for earlier tasks on its stream");
}

// The runtime numbers tasks its own way (the k-th task of every rank together); what it
// reports must still name the graph's ids.
TEST(TaskRuntime, ReportsNameTheGraphsTaskIds) {
  const Cluster c = two_h100();  // 80 GiB each
  TaskGraph g;
  const uint16_t s = g.stream("main");
  // Rank 1's three tasks come first: slots (0: rank 0's first, 1: rank 1's first, ...)
  // then differ from graph ids for every task below.
  g.add(compute(1, s, Duration::ms(1)));
  g.add(compute(1, s, Duration::ms(1)));
  g.add(compute(1, s, Duration::ms(1)));
  const TaskId first = g.add(compute(0, s, Duration::ms(1)));
  Task big;
  big.kind = TaskKind::kAlloc;
  big.rank = 0;
  big.stream = s;
  big.bytes = GiB(100);
  big.name = "too big";
  const TaskId alloc = g.add(big);
  const TaskId waits = add_deadlock(g, s);
  Simulation sim(c, {});
  Recorder rec;
  sim.add_observer(&rec);
  const RunResult r = sim.run(g);
  ASSERT_EQ(r.memory_overflows.size(), 1u);
  EXPECT_EQ(r.memory_overflows[0].task, alloc);
  EXPECT_EQ(rec.end_of(first), Time::ms(1));  // rank 0's compute
  EXPECT_EQ(rec.end_of(1), Time::ms(2));      // rank 1's second
  EXPECT_EQ(rec.end_of(2), Time::ms(3));      // and third
  ASSERT_FALSE(r.stalled.empty());
  EXPECT_EQ(r.stalled[0].rfind("task " + std::to_string(waits) + " (\"ar\", rank 0)", 0), 0u)
      << r.stalled[0];
}

// Analytical calls are priced once per kind of call; the options are part of the kind: a
// broadcast cut in 1,024 chunks pays the per-step latency 1,024 times, one in a single
// chunk once.
TEST(TaskRuntime, AnalyticalCallsDifferingOnlyInOptionsArePricedApart) {
  const Cluster c = two_h100();
  TaskGraph g;
  const uint16_t s = g.stream("comm");
  auto broadcast = [&](Bytes chunk) {
    CollectiveCall call{
        CollectiveOp::kBroadcast, CollectiveAlgorithm::kRing, {0, 1}, MiB(64), {}, "bcast"};
    call.options.chunk_bytes = chunk;
    call.analytical = true;
    return g.add_collective_with_tasks(call, s);
  };
  const uint32_t whole = broadcast(MiB(64));
  const uint32_t chunked = broadcast(KiB(64));
  Simulation sim(c, {});
  const RunResult r = sim.run(g);
  ASSERT_EQ(r.collectives.size(), 2u);
  auto duration = [&](uint32_t call) {
    for (const auto& rec : r.collectives) {
      if (rec.collective == call) return rec.end - rec.start;
    }
    return Duration::zero();
  };
  EXPECT_GT(duration(chunked), duration(whole) + Duration::us(100))
      << duration(chunked).count_ns() << " ns vs " << duration(whole).count_ns() << " ns";
}

TEST(TaskGraph, ValidateNamesEachStructuralProblem) {
  TaskGraph g;
  Task t = compute(5, g.stream("s"), Duration::ms(1), {3});
  g.add(t);
  Task send;
  send.kind = TaskKind::kSend;
  send.rank = 0;
  send.peer = 1;
  g.add(send);
  send.stream = 7;
  g.add(send);
  const auto errors = g.validate(2);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors[0].find("rank is outside 0..1"), std::string::npos);
  EXPECT_NE(errors[1].find("not an earlier task"), std::string::npos);
  EXPECT_NE(errors[2].find("stream 7 was never declared"), std::string::npos);
  EXPECT_NE(errors[3].find("2 send(s) without a matching recv"), std::string::npos);
}

TEST(Simulation, TwoSimulationsInOneProcessAreIndependent) {
  const Cluster c = two_h100();
  TaskGraph g1, g2;
  g1.add(compute(0, g1.stream("s"), Duration::ms(1)));
  g2.add(compute(0, g2.stream("s"), Duration::ms(7)));
  Simulation a(c, {}), b(c, {});
  EXPECT_EQ(b.run(g2).end, Time::ms(7));
  EXPECT_EQ(a.run(g1).end, Time::ms(1));
}

TEST(Simulation, RejectsUnknownNetworkModel) {
  const Cluster c = two_h100();
  SimulationOptions o;
  o.network_model = "packet";
  EXPECT_THROW(Simulation(c, o), std::invalid_argument);
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

TEST(TaskRuntime, LongChainsOfEmptyCollectivesDoNotRecurse) {
  // Zero-byte calls have no phases and finish at once; 200,000 of them back to back on
  // one stream must not nest 200,000 calls deep.
  const Cluster c = build_cluster(testing::one_region(testing::node_group(1, 2, "H100", 2),
                                                      testing::fabric(FabricKind::kNone)));
  TaskGraph g;
  const uint16_t s = g.stream("comm");
  for (int i = 0; i < 200'000; ++i) {
    g.add_collective_with_tasks(
        CollectiveCall{
            CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, {0, 1}, Bytes(0), {}, "empty"},
        s);
  }
  Simulation sim(c, {});
  const RunResult r = sim.run(g);
  EXPECT_TRUE(r.stalled.empty());
  EXPECT_EQ(r.collectives.size(), 200'000u);
  EXPECT_EQ(r.end, Time::zero());
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// A chain of `n` tasks on each of two ranks, each rank's k-th task after the other's
// (k-1)-th: one or two completions at every instant.
TaskGraph ping_pong_chain(int n) {
  TaskGraph g;
  const uint16_t s = g.stream("compute");
  std::vector<TaskId> last(2);
  for (int k = 0; k < n; ++k) {
    for (int r = 0; r < 2; ++r) {
      std::vector<TaskId> deps;
      if (k > 0) deps = {last[1 - r]};
      last[r] = g.add(compute(r, s, Duration::us(1 + r), deps));
    }
  }
  return g;
}

// The stop is requested from outside the runtime's checks (an observer, as a GUI's stop
// button would be pressed at any moment), halfway through: the run ends within check_every
// instants of it.
struct StopHalfway : SimObserver {
  StopHalfway(std::stop_source& s, const Engine& e, int64_t at) : stop(s), engine(e), half(at) {}
  void on_task(const TaskRecord&) override {
    if (++finished == half) {
      stop.request_stop();
      instants_at_stop = engine.instants();
    }
  }
  std::stop_source& stop;
  const Engine& engine;
  int64_t half;
  int64_t finished = 0;
  uint64_t instants_at_stop = 0;
};

TEST(TaskRuntime, StopsWithinTheCheckIntervalAndSaysItWasCancelled) {
  const Cluster c = two_h100();
  const TaskGraph g = ping_pong_chain(20'000);
  Simulation sim(c, {});
  std::stop_source stop;
  StopHalfway stopper(stop, sim.engine(), 20'000);
  sim.add_observer(&stopper);
  RunControl control;
  control.stop = stop.get_token();
  control.check_every = 500;
  int64_t last_done = -1;
  control.progress = [&](std::string_view phase, int64_t done, int64_t total) {
    EXPECT_EQ(phase, "simulation");
    EXPECT_EQ(total, 40'000);
    EXPECT_GE(done, last_done);
    last_done = done;
  };
  const RunResult r = sim.run(g, control);
  EXPECT_TRUE(r.cancelled);
  EXPECT_TRUE(r.stalled.empty());  // a stopped run is not a stalled one
  ASSERT_GT(stopper.instants_at_stop, 0u);
  EXPECT_LE(sim.engine().instants() - stopper.instants_at_stop, 500u);
  EXPECT_GE(stopper.finished, 20'000);
  EXPECT_LT(stopper.finished, 20'000 + 2 * 500 + 2);  // at most two tasks an instant
}

TEST(TaskRuntime, AControlWithoutAStopRunsToTheEnd) {
  const Cluster c = two_h100();
  const TaskGraph g = ping_pong_chain(2'000);
  Simulation plain_sim(c, {});
  const RunResult plain = plain_sim.run(g);
  Simulation sim(c, {});
  RunControl control;
  control.check_every = 100;
  int calls = 0;
  control.progress = [&](std::string_view, int64_t, int64_t) { ++calls; };
  const RunResult r = sim.run(g, control);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.end, plain.end);
  EXPECT_EQ(r.events, plain.events);
  EXPECT_GT(calls, 10);
}

}  // namespace
}  // namespace dtsim
