// What-if sweeps and the plan grid: a 5-point sweep charts 5 points, out-of-memory points
// and cells are where `dtsim run` and `dtsim plans` report them, the fastest plan that
// fits is outlined, a click opens a plan, sweeps overlay and cancel.
#include <fstream>
#include <map>
#include <sstream>

#include <QCheckBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QStandardPaths>
#include <QTest>
#include <nlohmann/json.hpp>

#include "gui/form_editor.h"
#include "gui/plan_grid_view.h"
#include "gui/whatif_view.h"
#include "tests/gui/gui_test_support.h"

namespace dtsim::gui::test {
namespace {

constexpr const char* kLlama = "scenarios/examples/llama3-70b-64xH100.json";

// The llama example with a batch of 16, written to `dir`: its plan grid has plans that do
// not apply (dp > 16), plans out of memory and plans that fit.
QString small_batch_llama(const QTemporaryDir& dir) {
  std::ifstream in(source_path(kLlama).toStdString());
  auto doc = nlohmann::ordered_json::parse(in);
  doc["training"]["global_batch"] = 16;
  const QString path = dir.filePath("llama-gb16.json");
  std::ofstream(path.toStdString()) << doc.dump(2);
  return path;
}

}  // namespace

class SweepTest : public QObject {
  Q_OBJECT

 private slots:
  // Recent files and other settings go to a test folder, not the user's.
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void a_five_point_sweep_charts_five_points();
  void out_of_memory_points_are_where_dtsim_run_reports_them();
  void bad_sweeps_are_refused_with_a_reason();
  void sweeps_overlay_up_to_three();
  void value_lists_and_ranges_expand();
  void the_plan_grid_marks_what_dtsim_plans_reports();
  void clicking_a_cell_opens_that_plan();
};

void SweepTest::a_five_point_sweep_charts_five_points() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path(kLlama)));
  WhatIfView* whatif = window.whatif_view();
  QSignalSpy finished(whatif, &WhatIfView::sweep_finished);
  QVERIFY2(whatif->start(QStringLiteral("cluster.nodes.0.nic_bandwidth"),
                         QStringLiteral("100Gbps,200Gbps,400Gbps,800Gbps,1600Gbps")),
           qPrintable(whatif->error_text()));
  QVERIFY(finished.wait(300000));
  QCOMPARE(whatif->sweeps(), 1);
  QCOMPARE(whatif->points_in_chart(0), 5);
  // More bandwidth never makes the step slower.
  const auto& results = whatif->runner()->results();
  for (size_t i = 1; i < results.size(); ++i)
    QVERIFY(results[i].step_s <= results[i - 1].step_s * 1.0001);
}

void SweepTest::out_of_memory_points_are_where_dtsim_run_reports_them() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path(kLlama)));
  WhatIfView* whatif = window.whatif_view();
  QSignalSpy finished(whatif, &WhatIfView::sweep_finished);
  const QStringList values = {"1", "2", "4", "8"};
  QVERIFY(whatif->start(QStringLiteral("training.micro_batch"), values.join(',')));
  QVERIFY(finished.wait(300000));
  QCOMPARE(whatif->points_in_chart(0), 4);
  int oom = 0;
  QTemporaryDir out;
  for (qsizetype i = 0; i < values.size(); ++i) {
    const QString dir = out.filePath(values[i]);
    QVERIFY(run_dtsim({"run", source_path(kLlama), "--set", "training.micro_batch=" + values[i],
                       "--out", dir, "--quiet", "--no-timing"}));
    std::ifstream in((dir + "/summary.json").toStdString());
    const auto summary = nlohmann::json::parse(in);
    const bool cli_oom = summary["training"]["oom_ranks"].get<int>() > 0;
    QCOMPARE(whatif->runner()->results()[static_cast<size_t>(i)].oom_ranks > 0, cli_oom);
    QCOMPARE(whatif->runner()->results()[static_cast<size_t>(i)].step_s,
             summary["training"]["iteration_time_s"].get<double>());
    oom += cli_oom;
  }
  QVERIFY2(oom > 0 && oom < 4, "the sweep should hold points that fit and points that do not");
  QCOMPARE(whatif->oom_points_in_chart(0), oom);
}

void SweepTest::bad_sweeps_are_refused_with_a_reason() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path(kLlama)));
  WhatIfView* whatif = window.whatif_view();
  QVERIFY(!whatif->start(QStringLiteral("training.micro_batch"), QStringLiteral("1,,2")));
  QVERIFY(whatif->error_text().contains("empty value"));
  QVERIFY(!whatif->start(QStringLiteral("training.micro_batch"), QStringLiteral("8..2")));
  QVERIFY(whatif->error_text().contains("range"));
  QVERIFY(!whatif->start(QString(), QStringLiteral("1,2")));
  // A value the loader rejects is a point with its error, not a crash.
  QSignalSpy finished(whatif, &WhatIfView::sweep_finished);
  QVERIFY(whatif->start(QStringLiteral("parallelism.tp"), QStringLiteral("8,3")));
  QVERIFY(finished.wait(300000));
  QCOMPARE(whatif->points_in_chart(0), 1);
  QVERIFY2(whatif->error_text().contains("3:"), qPrintable(whatif->error_text()));
}

void SweepTest::sweeps_overlay_up_to_three() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path(kLlama)));
  WhatIfView* whatif = window.whatif_view();
  whatif->findChild<QCheckBox*>()->setChecked(true);
  for (int i = 0; i < 4; ++i) {
    QSignalSpy finished(whatif, &WhatIfView::sweep_finished);
    QVERIFY(whatif->start(QStringLiteral("training.micro_batch"), QStringLiteral("1,2")));
    QVERIFY(finished.wait(300000));
    QCOMPARE(whatif->sweeps(), std::min(i + 1, 3));
  }
  whatif->findChild<QCheckBox*>()->setChecked(false);
  QSignalSpy finished(whatif, &WhatIfView::sweep_finished);
  QVERIFY(whatif->start(QStringLiteral("training.micro_batch"), QStringLiteral("1")));
  QVERIFY(finished.wait(300000));
  QCOMPARE(whatif->sweeps(), 1);
}

void SweepTest::value_lists_and_ranges_expand() {
  QString error;
  QCOMPARE(expand_values(QStringLiteral("1..4"), error), QStringList({"1", "2", "3", "4"}));
  QCOMPARE(expand_values(QStringLiteral("1..64*4"), error), QStringList({"1", "4", "16", "64"}));
  QCOMPARE(expand_values(QStringLiteral("H100, A100-80GB"), error),
           QStringList({"H100", "A100-80GB"}));
  QCOMPARE(expand_values(QStringLiteral("[1,2],[3]"), error), QStringList({"[1,2]", "[3]"}));
  QVERIFY(error.isEmpty());
  QVERIFY(expand_values(QStringLiteral("1..100000"), error).isEmpty());
  QVERIFY(error.contains("64"));
}

void SweepTest::the_plan_grid_marks_what_dtsim_plans_reports() {
  QTemporaryDir dir;
  const QString path = small_batch_llama(dir);
  const QString csv = dir.filePath("plans.csv");
  QVERIFY(run_dtsim({"plans", path, "--csv", csv}));
  std::map<std::pair<int, int>, std::vector<std::string>> cli;  // (tp, pp) -> row
  std::ifstream in(csv.toStdString());
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    cli[{std::stoi(cells[0]), std::stoi(cells[1])}] = cells;
  }
  MainWindow window(fields());
  window.resize(1280, 800);
  window.show();
  QVERIFY(window.open_file(path));
  PlanGridView* grid = window.plan_grid_view();
  QSignalSpy finished(grid, &PlanGridView::grid_finished);
  QVERIFY(grid->start());
  QVERIFY(finished.wait(300000));
  QCOMPARE(grid->plans().size(), cli.size());
  int oom = 0, invalid = 0;
  for (size_t i = 0; i < grid->plans().size(); ++i) {
    const auto& plan = grid->plans()[i];
    const auto& f = grid->figures()[i];
    const auto& row = cli.at({plan.tp, plan.pp});
    QCOMPARE(f.completed, row[3] == "1");
    if (!f.completed) {
      ++invalid;
      QVERIFY(!f.error.isEmpty());
      continue;
    }
    QCOMPARE(f.oom_ranks, std::stoi(row[7]));
    QCOMPARE(f.step_s, std::stod(row[4]));
    oom += f.oom_ranks > 0;
    QCOMPARE(static_cast<int>(i) == grid->best(), row[8] == "1");
  }
  QVERIFY2(oom > 0 && invalid > 0 && grid->best() >= 0, "the grid should hold every kind of cell");
  // And one cell against `dtsim run` itself.
  const auto& b = grid->plans()[static_cast<size_t>(grid->best())];
  QVERIFY(run_dtsim({"run", path, "--set", QStringLiteral("parallelism.tp=%1").arg(b.tp), "--set",
                     QStringLiteral("parallelism.pp=%1").arg(b.pp), "--out", dir.filePath("best"),
                     "--quiet", "--no-timing"}));
  std::ifstream summary_in(dir.filePath("best/summary.json").toStdString());
  const auto summary = nlohmann::json::parse(summary_in);
  QCOMPARE(grid->figures()[static_cast<size_t>(grid->best())].step_s,
           summary["training"]["iteration_time_s"].get<double>());
  QCOMPARE(summary["training"]["oom_ranks"].get<int>(), 0);
  window.show_view(QStringLiteral("plangrid"));
  QCoreApplication::processEvents();
  QVERIFY(window.grab().save(screenshot_path(QStringLiteral("gui-plangrid.png"))));
}

void SweepTest::clicking_a_cell_opens_that_plan() {
  QTemporaryDir dir;
  MainWindow window(fields());
  QVERIFY(window.open_file(small_batch_llama(dir)));
  PlanGridView* grid = window.plan_grid_view();
  QSignalSpy finished(grid, &PlanGridView::grid_finished);
  QVERIFY(grid->start());
  QVERIFY(finished.wait(300000));
  const int best = grid->best();
  QVERIFY(best >= 0);
  grid->choose(best);
  const auto& doc = window.form()->document();
  QCOMPARE(doc["parallelism"]["tp"].get<int>(), grid->plans()[static_cast<size_t>(best)].tp);
  QCOMPARE(doc["parallelism"]["pp"].get<int>(), grid->plans()[static_cast<size_t>(best)].pp);
  window.undo_stack()->undo();  // one edit, undone at once
  QCOMPARE(window.form()->document()["parallelism"]["pp"].get<int>(), 4);
}

}  // namespace dtsim::gui::test

QTEST_MAIN(dtsim::gui::test::SweepTest)
#include "sweep_test.moc"
