// A lowered task's crowding from its kernels' two times: alone over beside co-runners,
// launches included, for every task of the op list; nothing from a model without them.
#include <gtest/gtest.h>

#include "calibration/measured_cost_model.h"
#include "models/cost_model.h"
#include "models/task_crowding.h"
#include "sim/device_catalog.h"
#include "tests/calibration/measured_figures.h"
#include "tests/sim/test_clusters.h"

namespace dtsim::calibration {
namespace {

using figures::beside;
using figures::gemm;

TEST(TaskCrowding, ATasksAloneFractionSumsItsKernelsWithTheirLaunches) {
  const Cluster c = build_cluster(testing::one_region(testing::node_group(1, 2, "CPU", 1, 10),
                                             testing::fabric(FabricKind::kSingleSwitch)));
  const OpSignature a = gemm(128, 128, 128), b = gemm(512, 512, 512);
  CostDatabase db;
  db.device.backend = "cpu";
  db.device.catalog_name = "CPU";
  db.device.co_runners = 1;
  db.entries = {beside(a, 2e-3, 1e-3), beside(b, 40e-3, 30e-3)};
  const MeasuredCostModel model(db, "CPU", std::make_unique<models::RooflineCostModel>());

  TaskGraph g;
  const uint16_t s = g.stream("compute");
  const std::vector<OpSignature> ops{a, b};
  Task t = testing::compute(0, s, Duration::ms(50));
  t.ops = g.add_op_list(ops);
  const TaskId first = g.add(t);
  t.rank = 1;
  const TaskId second = g.add(t);
  const TaskId plain = g.add(testing::compute(1, s, Duration::ms(1)));
  models::set_task_crowding(c, model, g);

  const double launch = find_builtin_device("CPU")->efficiency.kernel_launch.seconds();
  const double f = (1e-3 + 30e-3 + 2 * launch) / (2e-3 + 40e-3 + 2 * launch);
  for (TaskId id : {first, second}) {
    EXPECT_EQ(g.crowding(id).co_runners, 1);
    EXPECT_NEAR(g.crowding(id).alone_fraction, f, 1e-6);
  }
  EXPECT_EQ(g.crowding(plain).co_runners, 0);  // no ops: a given duration stays as given
  EXPECT_EQ(g.crowding(plain).alone_fraction, 1);

  // The roofline prices no co-runners: the graph gets no crowding table at all.
  TaskGraph h;
  Task u = testing::compute(0, h.stream("compute"), Duration::ms(50));
  u.ops = h.add_op_list(ops);
  h.add(u);
  models::set_task_crowding(c, models::RooflineCostModel(), h);
  EXPECT_FALSE(h.has_crowding());
}

}  // namespace
}  // namespace dtsim::calibration
