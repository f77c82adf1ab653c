// Network models on hand-built topologies: alpha-beta timing, max-min sharing, contention
// between groups, and exact fast-forward of repeated rounds.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "sim/analytical_network.h"
#include "sim/collectives/collective_plan.h"
#include "sim/flow_network.h"

namespace dtsim {
namespace {

// Devices d0..d(n-1) on one switch; every device link is 10 GB/s with 1 us latency, so a
// device-to-device route is 2 links, 2 us, bottleneck 10 GB/s.
struct Star {
  // `extend` adds to the topology before it is routed.
  explicit Star(int n, const char* model = "flow",
                const std::function<void(Star&, VertexId sw)>& extend = nullptr) {
    const VertexId sw = topology.add_vertex({"switch", VertexKind::kSwitch, 0, -1});
    for (int i = 0; i < n; ++i) {
      devices.push_back(topology.add_vertex({"d" + std::to_string(i), VertexKind::kDevice, 0, i}));
      topology.connect(devices.back(), sw, Bandwidth::gb_per_s(10), Duration::us(1), LinkKind::kNetwork);
    }
    if (extend) extend(*this, sw);
    router = std::make_unique<Router>(topology);
    net = make_network_model(model, engine, topology, *router, observers);
    engine.add_model(net.get());
  }
  // Starts a group now and returns a slot that receives its completion time.
  std::shared_ptr<Time> group(std::vector<FlowSpec> flows, int64_t repeat = 1) {
    auto done = std::make_shared<Time>(Time::infinite());
    net->start_group(std::move(flows), repeat, [this, done] { *done = engine.now(); });
    return done;
  }
  FlowSpec flow(int a, int b, Bytes bytes) { return FlowSpec{devices[a], devices[b], bytes}; }
  // Runs `rounds` rounds of make_round(): as one group with repeat = rounds, or, when
  // `chained`, as separate one-round groups started one after another (never
  // fast-forwarded: the reference). `done` runs after the last round.
  void repeated(std::function<std::vector<FlowSpec>()> make_round, int rounds, bool chained,
                std::function<void()> done) {
    if (!chained) {
      net->start_group(make_round(), rounds, std::move(done));
      return;
    }
    auto left = std::make_shared<int>(rounds);
    auto next = std::make_shared<std::function<void()>>();
    *next = [this, make_round, left, next, done] {
      if (--*left > 0) {
        net->start_group(make_round(), 1, *next);
      } else {
        done();
        *next = nullptr;  // break the cycle
      }
    };
    net->start_group(make_round(), 1, *next);
  }
  static LinkId uplink(int i) { return static_cast<LinkId>(2 * i); }        // d_i -> switch
  static LinkId downlink(int i) { return static_cast<LinkId>(2 * i + 1); }  // switch -> d_i

  Topology topology;
  std::vector<VertexId> devices;
  Engine engine;
  ObserverList observers;
  std::unique_ptr<Router> router;
  std::unique_ptr<NetworkModel> net;
};

constexpr int64_t kLatencyNs = 2000;

TEST(FlowNetwork, SingleFlowTakesLatencyPlusBytesOverBandwidth) {
  Star s(2);
  auto t = s.group({s.flow(0, 1, Bytes(1'000'000'000))});  // 1 GB at 10 GB/s = 0.1 s
  s.engine.run();
  EXPECT_EQ(t->count_ns(), kLatencyNs + 100'000'000);
  s.net->finish(s.engine.now());
  EXPECT_DOUBLE_EQ(s.net->link_stats().stats(s.uplink(0)).bytes, 1e9);
  EXPECT_EQ(s.net->link_stats().stats(s.uplink(0)).busy.count_ns(), 100'000'000);
  EXPECT_DOUBLE_EQ(s.net->link_stats().stats(s.uplink(0)).peak_utilization, 1.0);
}

TEST(FlowNetwork, ALoneFlowStoppedHalfwayCountsWhatItCarried) {
  // A lone flow adds its traffic to its links when it ends; a run stopped before then
  // still counts the 0.5 GB it carried in its first 50 ms at 10 GB/s.
  Star s(2);
  auto t = s.group({s.flow(0, 1, Bytes(1'000'000'000))});
  const Time stop = Time::ns(kLatencyNs + 50'000'000);
  s.engine.run(stop);
  EXPECT_EQ(*t, Time::infinite());
  s.net->finish(stop);
  for (LinkId l : {s.uplink(0), s.downlink(1)}) {
    EXPECT_DOUBLE_EQ(s.net->link_stats().stats(l).bytes, 5e8);
    EXPECT_EQ(s.net->link_stats().stats(l).busy.count_ns(), 50'000'000);
    EXPECT_DOUBLE_EQ(s.net->link_stats().stats(l).peak_utilization, 1.0);
  }
  EXPECT_EQ(s.net->link_stats().stats(s.uplink(1)).bytes, 0);
}

TEST(FlowNetwork, ARunStoppedAsALoneFlowStartsCountsItsPeakAsTheSolverWould) {
  // Stopped at the instant the flow starts (after its route's latency): no bytes, no busy
  // time, but its links were loaded, as they are with the shortcut off. Finishing twice
  // counts nothing twice.
  for (bool lone : {true, false}) {
    Star s(2);
    static_cast<FlowNetworkModel&>(*s.net).set_lone_flows(lone);
    s.group({s.flow(0, 1, Bytes(1'000'000'000))});
    s.engine.run(Time::ns(kLatencyNs));
    s.net->finish(Time::ns(kLatencyNs));
    s.net->finish(Time::ns(kLatencyNs));
    const LinkStats& up = s.net->link_stats().stats(s.uplink(0));
    EXPECT_DOUBLE_EQ(up.peak_utilization, 1.0) << "lone flows " << lone;
    EXPECT_EQ(up.bytes, 0) << "lone flows " << lone;
    EXPECT_EQ(up.busy.count_ns(), 0) << "lone flows " << lone;
  }
}

TEST(FlowNetwork, AFlowJoinedAtItsStartNeverRanAloneOnItsLinks) {
  // d0->d2 starts alone; d1->d2 meets it on switch->d2 at the same instant, so both run at
  // 5 GB/s from the start: d0's uplink peaks at 0.5, not at the 10 GB/s it would have had.
  Star s(3);
  s.group({s.flow(0, 2, Bytes(1'000'000'000))});
  s.group({s.flow(1, 2, Bytes(1'000'000'000))});
  s.engine.run();
  s.net->finish(s.engine.now());
  const LinkStatsTable& stats = s.net->link_stats();
  EXPECT_DOUBLE_EQ(stats.stats(s.uplink(0)).peak_utilization, 0.5);
  EXPECT_DOUBLE_EQ(stats.stats(s.uplink(1)).peak_utilization, 0.5);
  EXPECT_DOUBLE_EQ(stats.stats(s.downlink(2)).peak_utilization, 1.0);
  EXPECT_NEAR(stats.stats(s.downlink(2)).bytes, 2e9, 1e-3);
  EXPECT_EQ(stats.stats(s.uplink(0)).busy.count_ns(), 200'000'000);
}

TEST(FlowNetwork, ALoneFlowJoinedLaterKeepsWhatItCarriedAlone) {
  // d0->d2 (1 GB) runs alone for 50 ms (0.5 GB at 10 GB/s); d1->d2 (0.25 GB) then shares
  // switch->d2 at 5 GB/s each for 50 ms, and d0->d2 ends its last 0.25 GB alone in 25 ms.
  Star s(3);
  auto a = s.group({s.flow(0, 2, Bytes(1'000'000'000))});
  std::shared_ptr<Time> b;
  s.engine.schedule_at(Time::ns(50'000'000),
                       [&] { b = s.group({s.flow(1, 2, Bytes(250'000'000))}); });
  s.engine.run();
  EXPECT_EQ(a->count_ns(), kLatencyNs + 125'000'000);
  EXPECT_EQ(b->count_ns(), 50'000'000 + kLatencyNs + 50'000'000);
  s.net->finish(s.engine.now());
  const LinkStatsTable& stats = s.net->link_stats();
  EXPECT_NEAR(stats.stats(s.uplink(0)).bytes, 1e9, 1e-3);
  EXPECT_NEAR(stats.stats(s.downlink(2)).bytes, 1.25e9, 1e-3);
  EXPECT_DOUBLE_EQ(stats.stats(s.uplink(0)).peak_utilization, 1.0);
  EXPECT_EQ(stats.stats(s.uplink(0)).busy.count_ns(), 125'000'000);
}

TEST(FlowNetwork, LoneTrafficIsTheSameWhetherTheLinksAreWatchedOrNot) {
  // Watching the links (a trace, the GUI's timeline) must not change their figures, bit for
  // bit, through a join, a solved flow after lone ones on the same link, repeated rounds
  // and a run stopped while a lone flow runs.
  auto run = [](bool watched) {
    Star s(4);
    SimObserver watcher;
    if (watched) s.observers.add(&watcher);
    s.group({s.flow(0, 2, Bytes(1'000'000'000))});
    s.engine.schedule_at(Time::ns(50'000'000),
                         [&] { s.group({s.flow(1, 2, Bytes(250'000'000))}); });
    s.engine.schedule_at(Time::ns(300'000'000), [&] {
      s.group({s.flow(0, 2, Bytes(300'000'007))}, 3);
      s.group({s.flow(3, 1, Bytes(123'456'789))});
    });
    s.engine.schedule_at(Time::ns(420'000'000), [&] {
      s.group({s.flow(1, 2, Bytes(77'777'777)), s.flow(3, 2, Bytes(55'555'555))});
      s.group({s.flow(1, 3, Bytes(10'000'000'000))});
    });
    const Time stop = Time::ns(600'000'000);
    s.engine.run(stop);
    s.net->finish(stop);
    std::vector<LinkStats> links;
    for (LinkId l = 0; l < s.topology.num_links(); ++l)
      links.push_back(s.net->link_stats().stats(l));
    return links;
  };
  const std::vector<LinkStats> watched = run(true), unwatched = run(false);
  ASSERT_EQ(watched.size(), unwatched.size());
  for (size_t l = 0; l < watched.size(); ++l) {
    EXPECT_EQ(watched[l].bytes, unwatched[l].bytes) << "link " << l;
    EXPECT_EQ(watched[l].busy, unwatched[l].busy) << "link " << l;
    EXPECT_EQ(watched[l].peak_utilization, unwatched[l].peak_utilization) << "link " << l;
  }
  // d1's uplink: d1->d2's 0.25 GB, then full from 420 ms + 2 us until the stop (d1->d2 and
  // d1->d3 share it, then d1->d3, still running at the stop, has it alone).
  EXPECT_NEAR(unwatched[Star::uplink(1)].bytes, 2.5e8 + 1e10 * (0.180 - 2e-6), 1e3);
  EXPECT_GT(unwatched[Star::downlink(2)].bytes, 2e9);
}

TEST(FlowNetwork, TwoFlowsIntoOneDeviceShareItsDownlink) {
  // d0->d2 and d1->d2 meet on switch->d2: 5 GB/s each; 1 GB each takes 0.2 s.
  Star s(3);
  auto a = s.group({s.flow(0, 2, Bytes(1'000'000'000))});
  auto b = s.group({s.flow(1, 2, Bytes(1'000'000'000))});
  s.engine.run();
  EXPECT_EQ(a->count_ns(), kLatencyNs + 200'000'000);
  EXPECT_EQ(b->count_ns(), kLatencyNs + 200'000'000);
}

TEST(FlowNetwork, ShortFlowLeavesItsShareToTheLongOne) {
  // Both at 5 GB/s until the 0.5 GB flow ends at 0.1 s; the 1 GB flow has 0.5 GB left and
  // then runs alone at 10 GB/s for 0.05 s: done at 0.15 s.
  Star s(3);
  auto small = s.group({s.flow(0, 2, Bytes(500'000'000))});
  auto large = s.group({s.flow(1, 2, Bytes(1'000'000'000))});
  s.engine.run();
  EXPECT_EQ(small->count_ns(), kLatencyNs + 100'000'000);
  EXPECT_EQ(large->count_ns(), kLatencyNs + 150'000'000);
}

TEST(FlowNetwork, DisjointFlowsDoNotInteract) {
  Star s(4);
  auto a = s.group({s.flow(0, 1, Bytes(1'000'000'000))});
  auto b = s.group({s.flow(2, 3, Bytes(1'000'000'000))});
  s.engine.run();
  EXPECT_EQ(a->count_ns(), kLatencyNs + 100'000'000);
  EXPECT_EQ(b->count_ns(), kLatencyNs + 100'000'000);
}

TEST(FlowNetwork, ARoundEndsWithItsSlowestFlow) {
  // One round: 1 GB d0->d1 and 2 GB d2->d3 in parallel -> the round lasts 0.2 s + latency.
  Star s(4);
  auto t = s.group({s.flow(0, 1, Bytes(1'000'000'000)), s.flow(2, 3, Bytes(2'000'000'000))});
  s.engine.run();
  EXPECT_EQ(t->count_ns(), kLatencyNs + 200'000'000);
}

TEST(FlowNetwork, FastForwardEqualsRunningEveryRound) {
  // A ring step over 4 devices, 1 MiB each, 1000 rounds: (2 us + 104.8576 us) x 1000.
  const Bytes chunk = MiB(1);
  auto ring = [&](Star& s) {
    return std::vector<FlowSpec>{s.flow(0, 1, chunk), s.flow(1, 2, chunk), s.flow(2, 3, chunk),
                                 s.flow(3, 0, chunk)};
  };
  Star fast(4);
  Time t_fast;
  fast.repeated([&] { return ring(fast); }, 1000, false, [&] { t_fast = fast.engine.now(); });
  fast.engine.run();
  fast.net->finish(fast.engine.now());
  EXPECT_EQ(t_fast.count_ns(), (kLatencyNs + 104858) * 1000);
  EXPECT_EQ(fast.net->fast_forwarded_rounds(), 999);

  // Reference: the same rounds as 1000 separate groups chained one after the other.
  Star slow(4);
  slow.repeated([&] { return ring(slow); }, 1000, true, [] {});
  slow.engine.run();
  slow.net->finish(slow.engine.now());
  EXPECT_EQ(slow.net->fast_forwarded_rounds(), 0);
  EXPECT_EQ(slow.engine.now(), t_fast);
  for (LinkId l = 0; l < fast.topology.num_links(); ++l) {
    EXPECT_NEAR(fast.net->link_stats().stats(l).bytes, slow.net->link_stats().stats(l).bytes, 1.0);
    EXPECT_EQ(fast.net->link_stats().stats(l).busy, slow.net->link_stats().stats(l).busy);
  }
}

TEST(FlowNetwork, NoFastForwardWhileAnotherGroupSharesALink) {
  // Two groups of 10 rounds each send 1 MB into d2 at the same time: every round both
  // share the downlink (5 GB/s each): 10 x (2 us + 200 us).
  Star s(3);
  auto a = s.group({s.flow(0, 2, Bytes(1'000'000))}, 10);
  auto b = s.group({s.flow(1, 2, Bytes(1'000'000))}, 10);
  s.engine.run();
  EXPECT_EQ(a->count_ns(), 10 * (kLatencyNs + 200'000));
  EXPECT_EQ(b->count_ns(), 10 * (kLatencyNs + 200'000));
  EXPECT_EQ(s.net->fast_forwarded_rounds(), 0);
}

TEST(FlowNetwork, FastForwardStopsBeforeALaterFlowArrives) {
  // Group A: 100 rounds of 1 MB d0->d2 (102 us each). At t = 1 ms a 10 MB flow d1->d2
  // starts. The result must equal the run where every round is simulated.
  auto scenario = [](Star& s, bool expand, Time& a_done, Time& b_done) {
    s.repeated([&s] { return std::vector<FlowSpec>{s.flow(0, 2, Bytes(1'000'000))}; }, 100, expand,
               [&] { a_done = s.engine.now(); });
    s.engine.schedule_at(Time::ns(1'000'000), [&] {
      s.net->start_group({s.flow(1, 2, Bytes(10'000'000))}, 1, [&] { b_done = s.engine.now(); });
    });
    s.engine.run();
  };
  Star fast(3), slow(3);
  Time fa, fb, sa, sb;
  scenario(fast, false, fa, fb);
  scenario(slow, true, sa, sb);
  EXPECT_EQ(fa, sa);
  EXPECT_EQ(fb, sb);
  EXPECT_GT(fast.net->fast_forwarded_rounds(), 0);
  // Without B, A would end at 100 x 102 us = 10.2 ms; sharing with B delays it.
  EXPECT_GT(fa.count_ns(), 100 * (kLatencyNs + 100'000));
}

// A one-byte flow of another group crosses d0's uplink just before a phase's flow reaches
// it (both wait out 2 us of latency; the phase starts 2 ns later): the two never share the
// link, but the byte and its nanosecond fall in the phase's run. That run is not the
// phase's alone and is not kept, so the phase's next run is simulated, and every link
// ends with the busy time that simulating both gives.
TEST(FlowNetwork, APhaseRunThatAnotherFlowCrossedIsNotReplayed) {
  Duration busy[2];
  Time second[2];
  int64_t replayed[2];
  for (int replay = 0; replay < 2; ++replay) {
    Star s(3);
    s.net->set_phase_replay(replay == 1);
    auto plan = std::make_shared<const CollectivePlan>();
    const auto flows = [&] { return std::vector<FlowSpec>{s.flow(0, 2, Bytes(1'000'000'000))}; };
    s.group({s.flow(0, 1, Bytes(1))});
    s.engine.schedule_at(Time::ns(2), [&] {
      s.net->start_phase(plan, 0, flows, 1, true, [&] {
        s.net->start_phase(plan, 0, flows, 1, true, [&] { second[replay] = s.engine.now(); });
      });
    });
    s.engine.run();
    s.net->finish(s.engine.now());
    busy[replay] = s.net->link_stats().stats(s.uplink(0)).busy;
    replayed[replay] = s.net->replayed_phases();
  }
  EXPECT_EQ(second[1], second[0]);
  EXPECT_EQ(busy[1], busy[0]);
  EXPECT_EQ(replayed[1], 0);
  // 1 ns of the byte, and twice 0.1 s.
  EXPECT_EQ(busy[0].count_ns(), 1 + 2 * 100'000'000);
}

TEST(FlowNetwork, ZeroByteAndSelfFlowsFinishAfterLatencyOnly) {
  Star s(2);
  auto t = s.group({s.flow(0, 1, Bytes(0)), s.flow(1, 1, MiB(1))});
  s.engine.run();
  EXPECT_EQ(t->count_ns(), kLatencyNs);
}

// A group's later rounds reuse what its first worked out (each flow's route, the flows by
// latency): rounds mixing two latencies, a self flow and a zero-byte flow, where two flows
// share d1's downlink, must end and load every link as one-round groups chained one after
// another do, with fast-forward off so that every round is simulated.
TEST(FlowNetwork, ARepeatedGroupRunsEveryRoundAsItsFirst) {
  struct Run {
    Time end;
    std::vector<LinkStats> links;
  };
  const auto run = [](bool chained) {
    // A fifth device behind a slower port: routes to and from it take 2 us more.
    Star s(4, "flow", [](Star& star, VertexId sw) {
      star.devices.push_back(star.topology.add_vertex({"far", VertexKind::kDevice, 0, 4}));
      star.topology.connect(star.devices.back(), sw, Bandwidth::gb_per_s(5), Duration::us(3),
                            LinkKind::kNetwork);
    });
    s.net->set_fast_forward(false);
    const auto round = [&s] {
      return std::vector<FlowSpec>{s.flow(0, 1, MiB(1)), s.flow(4, 1, MiB(2)), s.flow(2, 2, MiB(1)),
                                   s.flow(3, 4, Bytes(0)), s.flow(1, 4, MiB(1))};
    };
    Run out;
    s.repeated(round, 5, chained, [&] { out.end = s.engine.now(); });
    s.engine.run();
    s.net->finish(s.engine.now());
    for (LinkId l = 0; l < s.topology.num_links(); ++l)
      out.links.push_back(s.net->link_stats().stats(l));
    return out;
  };
  const Run repeated = run(false);
  const Run chained = run(true);
  EXPECT_EQ(repeated.end, chained.end);
  ASSERT_EQ(repeated.links.size(), chained.links.size());
  for (size_t l = 0; l < repeated.links.size(); ++l) {
    EXPECT_EQ(repeated.links[l].bytes, chained.links[l].bytes) << "link " << l;
    EXPECT_EQ(repeated.links[l].busy, chained.links[l].busy) << "link " << l;
    EXPECT_EQ(repeated.links[l].peak_utilization, chained.links[l].peak_utilization)
        << "link " << l;
  }
  // Five rounds one after another, each as long as the far device's 2 MiB: 4 us of latency,
  // then 419,430.4 ns at its port's 5 GB/s (its share of d1's downlink), rounded up.
  EXPECT_EQ(repeated.end.count_ns(), 5 * (4000 + 419431));
}

TEST(AnalyticalNetwork, IgnoresContention) {
  // The same two flows into d2 as above: each takes latency + 1 GB / 10 GB/s as if alone.
  // The downlink carries 1 GB + 3 x 1 GB. Separate groups know nothing of each other, so
  // each group's own peak load is 1.
  Star s(3, "analytical");
  auto a = s.group({s.flow(0, 2, Bytes(1'000'000'000))});
  auto b = s.group({s.flow(1, 2, Bytes(1'000'000'000))}, 3);
  s.engine.run();
  s.net->finish(s.engine.now());
  EXPECT_EQ(a->count_ns(), kLatencyNs + 100'000'000);
  EXPECT_EQ(b->count_ns(), 3 * (kLatencyNs + 100'000'000));
  EXPECT_DOUBLE_EQ(s.net->link_stats().stats(s.downlink(2)).bytes, 4e9);
  EXPECT_DOUBLE_EQ(s.net->link_stats().stats(s.downlink(2)).peak_utilization, 1.0);
}

// A collective's phase is priced once per plan and replayed: a second call of the same
// plan takes what the first took and puts the same bytes on each link, at its own times.
// The plan's flows are asked for once only.
TEST(AnalyticalNetwork, APlansPhaseIsPricedOnceAndReplayed) {
  Star s(3, "analytical");
  auto plan = std::make_shared<const CollectivePlan>();
  int made = 0;
  const auto flows = [&] {
    ++made;
    // d0 -> d2 and d1 -> d2: 1 GB and 0.5 GB, each at the 10 GB/s of its route.
    return std::vector<FlowSpec>{s.flow(0, 2, Bytes(1'000'000'000)),
                                 s.flow(1, 2, Bytes(500'000'000))};
  };
  Time first = Time::infinite(), second = Time::infinite();
  s.net->start_phase(plan, 0, flows, 2, false, [&] {
    first = s.engine.now();
    s.net->start_phase(plan, 0, flows, 1, false, [&] { second = s.engine.now(); });
  });
  s.engine.run();
  s.net->finish(s.engine.now());
  EXPECT_EQ(made, 1);
  const int64_t round = kLatencyNs + 100'000'000;  // the slower transfer
  EXPECT_EQ(first.count_ns(), 2 * round);
  EXPECT_EQ(second.count_ns(), 3 * round);
  // Three rounds of both transfers on d2's downlink, three of one on each uplink.
  EXPECT_DOUBLE_EQ(s.net->link_stats().stats(s.downlink(2)).bytes, 4.5e9);
  EXPECT_DOUBLE_EQ(s.net->link_stats().stats(s.uplink(0)).bytes, 3e9);
  EXPECT_DOUBLE_EQ(s.net->link_stats().stats(s.uplink(1)).bytes, 1.5e9);
  // The downlink's load: 1.5 GB over its longer transfer's 0.1 s.
  EXPECT_DOUBLE_EQ(s.net->link_stats().stats(s.downlink(2)).peak_utilization, 1.5);
  EXPECT_EQ(s.net->link_stats().stats(s.downlink(2)).busy.count_ns(), 3 * 100'000'000);
  EXPECT_EQ(s.net->fast_forwarded_rounds(), 1);
}

// Without observers, a whole plan runs as one step: its phases' times add up to what
// running them one by one gives, and every link gets the same bytes, busy time and peak,
// call after call; its flows are made once per phase, when the plan is first priced.
TEST(AnalyticalNetwork, AWholePlanAddsUpToItsPhasesRunOneByOne) {
  auto plan = std::make_shared<CollectivePlan>();
  plan->phases.push_back({{{0, 2, Bytes(1'000'000'000)}, {1, 2, Bytes(500'000'000)}}, 2});
  plan->phases.push_back({{{2, 0, Bytes(300'000'001)}}, 1});
  plan->phases.push_back({{{0, 1, Bytes(7)}, {2, 1, Bytes(250'000'000)}, {1, 0, Bytes(3)}}, 5});
  struct Run {
    std::vector<Time> ends;
    std::vector<LinkStats> links;
    int64_t fast_forwarded = 0;
    int made = 0;
  };
  const auto run = [&](bool whole) {
    Star s(3, "analytical");
    EXPECT_TRUE(s.net->runs_whole_plans());
    Run out;
    const auto flows_of = [&](size_t i) {
      ++out.made;
      std::vector<FlowSpec> flows;
      for (const Transfer& t : plan->phases[i].transfers) flows.push_back(s.flow(t.src, t.dst, t.bytes));
      return flows;
    };
    // Two calls of the plan, the second when the first has ended.
    std::function<void(size_t, int)> phase = [&](size_t i, int call) {
      if (i == plan->phases.size()) {
        out.ends.push_back(s.engine.now());
        if (call == 0) phase(0, 1);
        return;
      }
      if (whole) {
        s.net->start_plan(plan, flows_of, [&, call] { phase(plan->phases.size(), call); });
      } else {
        s.net->start_phase(
            plan, i, [&, i] { return flows_of(i); }, plan->phases[i].repeat, false,
            [&, i, call] { phase(i + 1, call); });
      }
    };
    phase(0, 0);
    s.engine.run();
    s.net->finish(s.engine.now());
    for (LinkId l = 0; l < s.topology.num_links(); ++l) out.links.push_back(s.net->link_stats().stats(l));
    out.fast_forwarded = s.net->fast_forwarded_rounds();
    return out;
  };
  const Run whole = run(true), phases = run(false);
  ASSERT_EQ(whole.ends.size(), 2u);
  EXPECT_EQ(whole.ends, phases.ends);
  // The first call: 2 rounds of 0.1 s, one of 0.03 s, 5 of 0.025 s, each with 2 us of latency.
  EXPECT_EQ(whole.ends[0].count_ns(), 2 * 100'002'000 + 30'002'001 + 5 * 25'002'000);
  EXPECT_EQ(whole.ends[1].count_ns(), 2 * whole.ends[0].count_ns());
  for (size_t l = 0; l < whole.links.size(); ++l) {
    EXPECT_EQ(whole.links[l].bytes, phases.links[l].bytes) << "link " << l;
    EXPECT_EQ(whole.links[l].busy, phases.links[l].busy) << "link " << l;
    EXPECT_EQ(whole.links[l].peak_utilization, phases.links[l].peak_utilization) << "link " << l;
  }
  EXPECT_DOUBLE_EQ(whole.links[Star::downlink(2)].bytes, 2 * 2 * 1.5e9);
  EXPECT_EQ(whole.fast_forwarded, phases.fast_forwarded);
  EXPECT_EQ(whole.fast_forwarded, 2 * (1 + 4));
  EXPECT_EQ(whole.made, 3);
}

// An observer of busy spans needs them phase by phase: the model leaves the phases to the
// caller then.
TEST(AnalyticalNetwork, RunsPhaseByPhaseWhileItsLinksAreObserved) {
  Star s(2, "analytical");
  SimObserver watcher;
  s.observers.add(&watcher);
  EXPECT_FALSE(s.net->runs_whole_plans());
  Star flow(2, "flow");
  EXPECT_FALSE(flow.net->runs_whole_plans());
}

TEST(NetworkRegistry, KnowsBothModelsAndRejectsOthers) {
  Topology t;
  Router r(t);
  Engine e;
  ObserverList o;
  EXPECT_NE(make_network_model("flow", e, t, r, o), nullptr);
  EXPECT_NE(make_network_model("analytical", e, t, r, o), nullptr);
  EXPECT_EQ(make_network_model("packet", e, t, r, o), nullptr);
  EXPECT_EQ(network_models().size(), 2u);
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

// A flow of another group that arrives on one of a group's links after the group's own
// flow there has finished, but before its round ends, must stop the fast-forward: the
// next rounds share that link with it.
TEST(FlowNetwork, FastForwardSeesAFlowThatArrivesLateInTheRound) {
  auto scenario = [](Star& s, bool expand, Time& a_done, Time& b_done) {
    auto round = [&s] {
      return std::vector<FlowSpec>{s.flow(0, 1, Bytes(800'000)), s.flow(2, 3, Bytes(1'000'000))};
    };
    s.repeated(round, 10, expand, [&] { a_done = s.engine.now(); });
    s.engine.schedule_at(Time::ns(90'000), [&] {
      s.net->start_group({s.flow(0, 1, Bytes(100'000'000))}, 1, [&] { b_done = s.engine.now(); });
    });
    s.engine.run();
  };
  Star fast(4), slow(4);
  Time fa, fb, sa, sb;
  scenario(fast, false, fa, fb);
  scenario(slow, true, sa, sb);
  EXPECT_EQ(fa, sa);
  EXPECT_EQ(fb, sb);
  fast.net->finish(fast.engine.now());
  slow.net->finish(slow.engine.now());
  for (LinkId l = 0; l < fast.topology.num_links(); ++l) {
    EXPECT_NEAR(fast.net->link_stats().stats(l).bytes, slow.net->link_stats().stats(l).bytes, 1.0);
  }
}

}  // namespace
}  // namespace dtsim
