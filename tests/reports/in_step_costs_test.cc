// Feedback from a real run: each op's in-step durations become one in_step entry per
// signature, replacing an earlier in-step entry but not the isolated one; each collective
// call's in-step time joins the database's link as an in-step point; the per-op
// comparison ranks ops by their share of the step's gap.
#include "runner/in_step_costs.h"

#include <gtest/gtest.h>

#include <tuple>

#include "calibration/measured_collective_model.h"
#include "tests/calibration/measured_figures.h"

namespace dtsim {
namespace {

OpSignature gemm(int64_t m, const std::string& name) {
  OpSignature op;
  op.name = name;
  op.kind = KernelKind::kGemm;
  op.storage = op.math = DType::kFp32;
  op.gemm = {m, 64, 64, 1, false, true};
  op.flops = op.gemm.flops();
  return op;
}

// Rank 0 runs [a, b] twice (two tasks sharing the op list) over two steps.
struct Fixture {
  TaskGraph g;
  executor::MeasuredRun run;
  Fixture() {
    const OpListId list = g.add_op_list(std::vector<OpSignature>{gemm(64, "a"), gemm(128, "b")});
    for (int i = 0; i < 2; ++i) {
      Task t;
      t.kind = TaskKind::kCompute;
      t.name = "layer";
      t.stream = g.stream("compute");
      t.ops = list;
      g.add(t);
    }
    executor::MeasuredRank r;
    r.tasks = {0, 1};
    r.steps.push_back({0, {{0, 10}, {10, 20}}, {{1000, 5000}, {3000, 7000}}});
    r.steps.push_back({0, {{0, 10}, {10, 20}}, {{2000, 6000}, {4000, 8000}}});
    run.ranks = {r};
  }
};

TEST(InStepCosts, OneEntryPerSignatureWithASamplePerInstanceAndStep) {
  Fixture f;
  const auto entries = in_step_entries(f.g, f.run, 0, 2);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].op.name, "a");
  EXPECT_EQ(entries[0].context, calibration::MeasurementContext::kInStep);
  EXPECT_EQ(entries[0].samples_s.size(), 4u);
  EXPECT_NEAR(entries[0].stats.median_s, 2.5e-6, 1e-15);  // of 1, 3, 2, 4 us
  // Only the first step.
  const auto first = in_step_entries(f.g, f.run, 0, 1);
  ASSERT_EQ(first[1].samples_s.size(), 2u);
  EXPECT_NEAR(first[1].samples_s[0], 5e-6, 1e-15);
  EXPECT_NEAR(first[1].samples_s[1], 7e-6, 1e-15);
}

TEST(InStepCosts, ANewInStepEntryReplacesTheOldOneAndKeepsTheIsolatedOne) {
  Fixture f;
  calibration::CostDatabase base;
  calibration::CostEntry isolated;
  isolated.op = gemm(64, "a");
  isolated.samples_s = {1e-6};
  base.entries = {isolated};
  const auto once = with_in_step(base, in_step_entries(f.g, f.run, 0, 1));
  EXPECT_EQ(once.entries.size(), 3u);
  const auto twice = with_in_step(once, in_step_entries(f.g, f.run, 0, 2));
  ASSERT_EQ(twice.entries.size(), 3u);
  EXPECT_EQ(twice.entries[0].context, calibration::MeasurementContext::kIsolation);
  EXPECT_EQ(twice.entries[1].samples_s.size(), 4u);
}

TEST(InStepCosts, OpsAreRankedByTheirShareOfTheGap) {
  Fixture f;
  // a priced at its measured median, b at 1 us (measured 6 us): b holds the gap.
  const auto ops = compare_ops(
      f.g, f.run, [](const OpSignature& op, int) { return op.name == "a" ? 2.5e-6 : 1e-6; });
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].op.name, "b");
  EXPECT_EQ(ops[0].instances, 2);
  EXPECT_NEAR(ops[0].measured_s, 6.5e-6, 1e-12);
  EXPECT_NEAR(ops[0].total_gap_s, 2 * (1e-6 - 6.5e-6), 1e-12);
  EXPECT_NEAR(ops[1].total_gap_s, 0, 1e-12);
}

TEST(InStepCosts, RefusesOpTimesThatDoNotMatchTheOpList) {
  Fixture f;
  f.run.ranks[0].steps[0].op_ns[0] = {1000};
  EXPECT_THROW(in_step_entries(f.g, f.run, 0, 2), std::invalid_argument);
}

}  // namespace
}  // namespace dtsim

namespace dtsim {
namespace {

TEST(InStepCosts, EntriesOfOneSignatureFromSeveralRunsPoolTheirSamples) {
  Fixture f;
  auto one = in_step_entries(f.g, f.run, 0, 1);  // a: 1, 3 us; b: 5, 7 us
  auto two = in_step_entries(f.g, f.run, 1, 2);  // a: 2, 4 us; b: 6, 8 us
  one.insert(one.end(), two.begin(), two.end());
  const auto merged = merge_in_step(one);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].samples_s.size(), 4u);
  EXPECT_NEAR(merged[0].stats.median_s, 2.5e-6, 1e-15);
  EXPECT_NEAR(merged[1].stats.median_s, 6.5e-6, 1e-15);
}

// Ranks 0 and 1 on node 0, rank 2 on node 1. Call 0: a 1 MiB all-reduce of ranks 0 and 1;
// call 1: a task of two such calls (2 MiB); call 2: ranks 0 and 2, across the nodes.
struct CallFixture {
  TaskGraph g;
  Cluster cluster;
  executor::MeasuredRun run;
  CallFixture() {
    cluster.devices.resize(3);
    cluster.devices[2].node = 1;
    for (auto [members, mib, calls] :
         {std::tuple{std::vector<int>{0, 1}, 1, 1}, std::tuple{std::vector<int>{0, 1}, 2, 2},
          std::tuple{std::vector<int>{0, 2}, 1, 1}}) {
      CollectiveCall c;
      c.op = CollectiveOp::kAllReduce;
      c.members = members;
      c.bytes = MiB(mib);
      c.calls = calls;
      g.add_collective(c);
    }
    auto task = [&](int rank, uint32_t call) {
      Task t;
      t.kind = TaskKind::kCollective;
      t.name = "call";
      t.rank = rank;
      t.collective = call;
      t.stream = g.stream("compute");
      return g.add(t);
    };
    executor::MeasuredRank r0;
    r0.rank = 0;
    r0.tasks = {task(0, 0), task(0, 1), task(0, 2)};
    executor::MeasuredRank r1;
    r1.rank = 1;
    r1.tasks = {task(1, 0), task(1, 1)};
    executor::MeasuredRank r2;
    r2.rank = 2;
    r2.tasks = {task(2, 2)};
    // Step 0: call 0 from rank 1's arrival at 300 to 650; call 1 from 1000 to 3000 (two
    // calls: 1000 each). Step 1: call 0 from 100 to 500.
    r0.steps.push_back({0, {{100, 600}, {1000, 3000}, {4000, 5000}}, {}});
    r1.steps.push_back({0, {{300, 650}, {1000, 2800}}, {}});
    r2.steps.push_back({0, {{4500, 5000}}, {}});
    r0.steps.push_back({0, {{0, 500}, {1000, 2000}, {4000, 5000}}, {}});
    r1.steps.push_back({0, {{100, 400}, {900, 2000}}, {}});
    r2.steps.push_back({0, {{4500, 5000}}, {}});
    run.ranks = {r0, r1, r2};
  }
};

TEST(InStepCosts, ACallTakesFromItsLastMembersArrivalToItsLastEndPerCallOfOneNode) {
  CallFixture f;
  const auto calls = in_step_collectives(f.g, f.cluster, f.run, 0, 2, 2);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].op, CollectiveOp::kAllReduce);
  ASSERT_EQ(calls[0].points.size(), 1u);  // 1 MiB per call; the call across nodes left out
  EXPECT_EQ(calls[0].points[0].bytes, MiB(1));
  const std::vector<double> expected = {350e-9, 400e-9, 1000e-9, 500e-9};  // call 0, then 1
  ASSERT_EQ(calls[0].points[0].samples_s.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(calls[0].points[0].samples_s[i], expected[i], 1e-15) << i;
  }
  // Only the first step; groups of another size than the database's are not its to price.
  EXPECT_EQ(in_step_collectives(f.g, f.cluster, f.run, 0, 1, 2)[0].points[0].samples_s.size(), 2u);
  EXPECT_TRUE(in_step_collectives(f.g, f.cluster, f.run, 0, 2, 4).empty());
}

TEST(InStepCosts, CallsJoinTheIntraNodeLinkReplacingTheirSizeAndThePriceFollows) {
  CallFixture f;
  calibration::CostDatabase base;
  calibration::LinkCalibration link = calibration::figures::two_rank_all_reduce(
      {{int64_t{1} << 19, 1e-4}, {int64_t{1} << 21, 4e-4}});
  base.links = {link};
  base.device.reference_s = 1e-3;
  EXPECT_EQ(intra_node_ranks(base), 2);
  const auto calls = in_step_collectives(f.g, f.cluster, f.run, 0, 2, intra_node_ranks(base));
  const calibration::CostDatabase once = with_in_step(base, {}, calls);
  ASSERT_EQ(once.links[0].in_step.size(), 1u);
  EXPECT_EQ(once.links[0].in_step[0].points.size(), 1u);
  EXPECT_EQ(once.links[0].collectives[0].points.size(), 2u);  // the probe's are kept
  EXPECT_EQ(once.device.reference_s, 0);                      // no longer one machine speed
  // Fed again: the point of that size is replaced, a new size goes in order.
  std::vector<calibration::CollectiveMeasurement> more = calls;
  more[0].points.insert(more[0].points.begin(), calibration::figures::point(KiB(64), {9e-6}));
  more[0].points.back().samples_s = {7e-7};
  more[0].points.back().stats = calibration::stats_of(more[0].points.back().samples_s);
  const calibration::CostDatabase twice = with_in_step(once, {}, more);
  ASSERT_EQ(twice.links[0].in_step[0].points.size(), 2u);
  EXPECT_EQ(twice.links[0].in_step[0].points[0].bytes, KiB(64));
  EXPECT_EQ(twice.links[0].in_step[0].points[1].samples_s, std::vector<double>{7e-7});
  // The measured model prices a 1 MiB call by its in-step median: 450 ns of 350, 400,
  // 500 and 1000 (the curve would say 200 us).
  DeviceSpec cpu;
  cpu.name = "CPU";
  GroupLayout pair;
  pair.members = {0, 1};
  pair.node_of = {0, 0};
  pair.region_of = {0, 0};
  const calibration::MeasuredCollectiveModel model(once.links, "CPU");
  EXPECT_NEAR(model.price(CollectiveOp::kAllReduce, pair, cpu, MiB(1))->time.seconds(), 450e-9,
              1e-12);
  // A database without measured collectives has nothing for calls to join.
  EXPECT_TRUE(with_in_step(calibration::CostDatabase{}, {}, calls).links.empty());
  // Two runs' calls pool their samples by op and size.
  const auto pooled = merge_in_step_collectives({calls[0], calls[0]});
  ASSERT_EQ(pooled.size(), 1u);
  EXPECT_EQ(pooled[0].points[0].samples_s.size(), 8u);
}

}  // namespace
}  // namespace dtsim
