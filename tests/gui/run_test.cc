// Running from the window: the summary card shows the step time `dtsim run` reports, every
// view is filled from the run, out-of-memory ranks are named, bad input is marked at its
// fields, and a cancelled run gives control back. Saves a screenshot of each view.
#include <cstdlib>
#include <fstream>
#include <set>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QTest>
#include <nlohmann/json.hpp>

#include "gui/breakdown_view.h"
#include "gui/figures.h"
#include "gui/form_editor.h"
#include "gui/memory_view.h"
#include "gui/run_worker.h"
#include "gui/summary_view.h"
#include "gui/timeline_view.h"
#include "gui/topology_view.h"
#include "tests/gui/gui_test_support.h"

namespace dtsim::gui::test {
namespace {

constexpr const char* kLlama = "scenarios/examples/llama3-70b-64xH100.json";

// `dtsim run`'s summary.json for a scenario.
nlohmann::json cli_summary(const QString& scenario, const QString& out) {
  if (!run_dtsim({"run", scenario, "--out", out, "--quiet", "--no-timing"})) return {};
  std::ifstream in((out + "/summary.json").toStdString());
  return nlohmann::json::parse(in);
}

// The lines of `dtsim run --critical-path`'s critical_path.csv (its header and a row per
// task); 0 when the run fails.
size_t cli_critical_path_rows(const char* scenario) {
  QTemporaryDir out;
  if (!run_dtsim({"run", source_path(scenario), "--out", out.path(), "--quiet", "--critical-path"}))
    return 0;
  std::ifstream csv((out.path() + "/critical_path.csv").toStdString());
  size_t rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  return rows;
}

}  // namespace

class RunTest : public QObject {
  Q_OBJECT

 private slots:
  // Recent files and other settings go to a test folder, not the user's.
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void the_summary_card_shows_the_step_time_of_dtsim_run();
  void every_view_shows_the_run_and_is_saved_as_a_screenshot();
  void the_timeline_outlines_the_critical_path_dtsim_run_finds();
  void a_group_beyond_the_span_budget_is_recorded_when_opened();
  void the_topology_draws_every_vertex_and_cable_with_its_figures();
  void out_of_memory_ranks_are_named();
  void bad_input_is_marked_at_its_fields_when_run();
  void a_cancelled_run_gives_control_back();
};

void RunTest::the_summary_card_shows_the_step_time_of_dtsim_run() {
  QTemporaryDir out;
  for (const char* example : {kLlama, "scenarios/examples/small-transformer-2xcpu.json",
                              "scenarios/examples/allreduce-8xH100-nvswitch.json"}) {
    const nlohmann::json cli = cli_summary(
        source_path(example), out.filePath(QString::fromUtf8(example).section('/', -1)));
    QVERIFY2(!cli.is_null(), example);
    const double step = cli.contains("training") ? cli["training"]["iteration_time_s"].get<double>()
                                                 : cli["simulated_time_s"].get<double>();
    MainWindow window(fields());
    QVERIFY(window.open_file(source_path(example)));
    QVERIFY(run_and_wait(window));
    QCOMPARE(window.last_run()->step_seconds(), step);
    QCOMPARE(window.summary_view()->card_value(QStringLiteral("Step time")), seconds_text(step));
  }
  // A batch-size schedule's phases are counted on the time-to-train card.
  std::ifstream in(source_path(kLlama).toStdString());
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  doc["training"]["batch_rampup"] = {{"start", 16}, {"increment", 16}, {"samples", 300000}};
  const QString path = out.filePath("ramp.json");
  std::ofstream(path.toStdString()) << doc.dump(2);
  MainWindow window(fields());
  QVERIFY(window.open_file(path));
  QVERIFY(run_and_wait(window));
  QVERIFY2(window.summary_view()
               ->card_detail(QStringLiteral("Time to train"))
               .endsWith(QStringLiteral("the first in 3 smaller-batch phases")),
           qPrintable(window.summary_view()->card_detail(QStringLiteral("Time to train"))));
}

void RunTest::every_view_shows_the_run_and_is_saved_as_a_screenshot() {
  MainWindow window(fields());
  window.resize(1280, 800);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  QVERIFY(window.open_file(source_path(kLlama)));
  QVERIFY(run_and_wait(window));
  const auto run = window.last_run();
  const int ranks = run->scenario->cluster.num_ranks();
  QCOMPARE(ranks, 64);

  QVERIFY(!window.summary_view()->card_value(QStringLiteral("MFU")).isEmpty());
  QCOMPARE(window.summary_view()->card_value(QStringLiteral("Out of memory")),
           QStringLiteral("none"));
  // Memory: PP 4 stages, each stage's 16 ranks alike: 4 bars; a curve with the allocations.
  QCOMPARE(window.memory_view()->bar_count(), 4);
  QVERIFY(window.memory_view()->curve_points() > 10);
  const auto& memory = run->recording->memory();
  QCOMPARE(static_cast<int>(memory.size()), ranks);
  for (int r = 0; r < ranks; ++r) {
    const auto& summary_rank = run->summary["training"]["ranks"][static_cast<size_t>(r)];
    QCOMPARE(memory[static_cast<size_t>(r)].peak, summary_rank["peak_memory_bytes"].get<int64_t>());
    int64_t held = 0;
    for (int64_t b : memory[static_cast<size_t>(r)].at_peak) held += b;
    QCOMPARE(held, memory[static_cast<size_t>(r)].peak);
  }
  window.memory_view()->select_rank(63);
  QCOMPARE(window.memory_view()->selected_rank(), 63);
  // Breakdown: one bar per pipeline stage for 64 ranks (> 48).
  QCOMPARE(window.breakdown_view()->bar_count(), 4);
  // Timeline: every rank's streams, and a task under the pointer somewhere on row 0.
  TimelineView* timeline = window.timeline_view();
  window.show_view(QStringLiteral("timeline"));
  QCoreApplication::processEvents();
  // 64 ranks: grouped per node (8 of them), each shown by its first rank until expanded.
  QCOMPARE(timeline->group_count(), 8);
  const int collapsed = timeline->row_count();
  timeline->toggle_group(0);
  const int one_open = timeline->row_count();
  QVERIFY(one_open > collapsed);
  timeline->expand_all(true);
  QVERIFY(timeline->row_count() >= ranks);
  timeline->expand_all(false);
  QCOMPARE(timeline->row_count(), collapsed);
  // Per pipeline stage: 4 groups of 16 ranks, each shown by its first rank.
  timeline->set_grouping(RowGrouping::kStages);
  QCOMPARE(timeline->group_count(), 4);
  QVERIFY(timeline->row_count() < collapsed);
  timeline->set_grouping(RowGrouping::kRanks);
  QCOMPARE(timeline->group_count(), ranks);
  timeline->set_grouping(RowGrouping::kAuto);
  bool hit = false;
  for (int x = 160; x < timeline->viewport()->width() && !hit; x += 2)
    hit = timeline->task_at(QPoint(x, 28 + 9)).has_value();
  QVERIFY2(hit, "no task found on the first row");
  const double end = static_cast<double>(run->run.result.end.count_ns());
  QCOMPARE(timeline->window_end(), end);
  timeline->set_window(end * 0.25, end * 0.5);
  QCOMPARE(timeline->window_start(), end * 0.25);
  timeline->show_all();

  for (const char* view : kViewNames) {
    QVERIFY(window.show_view(QString::fromUtf8(view)));
    QCoreApplication::processEvents();
    const QString path = screenshot_path(QStringLiteral("gui-%1.png").arg(view));
    QVERIFY2(window.grab().save(path), qPrintable(path));
  }
}

void RunTest::the_timeline_outlines_the_critical_path_dtsim_run_finds() {
  const size_t rows = cli_critical_path_rows(kLlama);
  QVERIFY(rows > 1);
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path(kLlama)));
  QVERIFY(run_and_wait(window));
  QCOMPARE(window.last_run()->critical_steps, rows - 1);  // less the header
  // Allocations are on the path too, but not in the timeline's rows.
  const size_t in_rows = window.timeline_view()->critical_in_rows();
  QVERIFY(in_rows > 0 && in_rows <= rows - 1);
}

void RunTest::a_group_beyond_the_span_budget_is_recorded_when_opened() {
  const size_t rows = cli_critical_path_rows(kLlama);
  QVERIFY(rows > 1);

  // A budget of one span: the run records its first rank only, as a run of millions of
  // tasks records its first ranks.
  MainWindow window(fields());
  window.resize(1280, 800);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  window.set_span_budget(1);
  QVERIFY(window.open_file(source_path(kLlama)));
  QVERIFY(run_and_wait(window));
  window.show_view(QStringLiteral("timeline"));
  QCoreApplication::processEvents();
  QVERIFY(window.grab().save(screenshot_path(QStringLiteral("gui-timeline-unrecorded.png"))));
  const auto first = window.last_run();
  QCOMPARE(first->recording->recorded_ranks(), 1);
  QVERIFY(first->recording->recorded(0));
  // The critical path does not need the spans: it is the one dtsim run finds.
  QCOMPARE(first->critical_steps, rows - 1);
  TimelineView* timeline = window.timeline_view();
  QCOMPARE(timeline->group_count(), 8);  // 64 ranks, per node
  QVERIFY(!timeline->group_recorded(1));
  QVERIFY(timeline->rows_note().contains(QStringLiteral("1 of 64 ranks recorded")));
  timeline->set_window(1e8, 2e8);

  // Opening the second node runs again, recording its 8 ranks first: the budget set to
  // their tasks, which the first run's graph counts.
  const std::vector<int> node = first->scenario->cluster.nodes[1].devices;
  int64_t tasks = 0;
  for (const TaskView t : first->lowered.graph.tasks()) {
    tasks += std::find(node.begin(), node.end(), t.rank) != node.end();
  }
  window.set_span_budget(tasks);
  QSignalSpy ended(&window, &MainWindow::run_ended);
  timeline->click_group(1);
  QVERIFY(window.running());
  QVERIFY(ended.wait(300000));
  QVERIFY(ended.front().front().toBool());
  const auto second = window.last_run();
  QVERIFY(second != first);
  for (int r : node) QVERIFY(second->recording->recorded(r));
  QCOMPARE(second->recording->recorded_ranks(), 8);
  QVERIFY(timeline->group_recorded(1));
  QVERIFY(!timeline->group_recorded(0));
  // The same step, the group open, the same window of time.
  QCOMPARE(second->step_seconds(), first->step_seconds());
  QCOMPARE(second->critical_steps, first->critical_steps);
  QCOMPARE(timeline->window_start(), 1e8);
  QCOMPARE(timeline->window_end(), 2e8);
  QVERIFY(timeline->group_expanded(1));
  QVERIFY(timeline->rows_note().contains(QStringLiteral("8 of 64 ranks recorded")));
  QCoreApplication::processEvents();
  QVERIFY(window.grab().save(screenshot_path(QStringLiteral("gui-timeline-recorded-again.png"))));

  // A budget too small for the group: the run records what fits, and another click on the
  // group only closes it, instead of running the same again.
  window.set_span_budget(1);
  QSignalSpy again(&window, &MainWindow::run_ended);
  timeline->click_group(2);
  QVERIFY(again.wait(300000));
  QVERIFY(window.last_run()->recording->recorded(16));
  QVERIFY(!timeline->group_recorded(2));
  QVERIFY(timeline->group_expanded(2));
  timeline->click_group(2);
  QVERIFY(!window.running());
  QVERIFY(!timeline->group_expanded(2));

  // A row per rank: a rank that is not recorded is recorded when its name is clicked.
  timeline->set_grouping(RowGrouping::kRanks);
  QVERIFY(!window.last_run()->recording->recorded(40));
  QSignalSpy per_rank(&window, &MainWindow::run_ended);
  timeline->click_group(40);
  QVERIFY(window.running());
  QVERIFY(per_rank.wait(300000));
  QVERIFY(window.last_run()->recording->recorded(40));
}

void RunTest::the_topology_draws_every_vertex_and_cable_with_its_figures() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path("scenarios/examples/geo-2regions-llama3-8b.json")));
  QVERIFY(run_and_wait(window));
  const auto run = window.last_run();
  const Topology& topo = run->scenario->cluster.topology;
  TopologyView* view = window.topology_view();
  QCOMPARE(view->vertices_drawn(), static_cast<int>(topo.num_vertices()));
  QCOMPARE(view->cables_drawn() * 2,
           static_cast<int>(topo.num_links()));  // every cable full duplex
  // The busiest link's figures, as a click on it shows them.
  LinkId busiest = 0;
  for (LinkId l = 0; l < topo.num_links(); ++l) {
    if (run->run.links[l].bytes > run->run.links[busiest].bytes) busiest = l;
  }
  QVERIFY(run->run.links[busiest].bytes > 0);
  view->select_link(busiest);
  QVERIFY2(
      view->details().contains(QString::fromStdString(topo.link_name(busiest)).toHtmlEscaped()),
      qPrintable(view->details()));
  QVERIFY(view->details().contains(bytes_text(run->run.links[busiest].bytes)));
  const double u = TopologyView::mean_utilization(*run, busiest);
  QVERIFY(u > 0 && u <= 1.0 + 1e-9);
}

void RunTest::out_of_memory_ranks_are_named() {
  // Llama 3 70B with no recomputation and micro-batch 4: activations overflow 80 GB.
  QTemporaryDir dir;
  std::ifstream in(source_path(kLlama).toStdString());
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  doc["training"]["recompute"] = "none";
  doc["training"]["micro_batch"] = 4;
  const QString path = dir.filePath("oom.json");
  std::ofstream(path.toStdString()) << doc.dump(2);
  const nlohmann::json cli = cli_summary(path, dir.filePath("out"));
  std::set<int> cli_oom;
  for (const auto& o : cli["memory_overflows"]) cli_oom.insert(o["rank"].get<int>());
  QVERIFY(!cli_oom.empty());
  MainWindow window(fields());
  QVERIFY(window.open_file(path));
  QVERIFY(run_and_wait(window));
  QCOMPARE(window.summary_view()->card_value(QStringLiteral("Out of memory")),
           QStringLiteral("%1 ranks").arg(cli_oom.size()));
}

void RunTest::bad_input_is_marked_at_its_fields_when_run() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path(kLlama)));
  window.form()->edit("/parallelism/tp", 3);  // 3 does not divide the 8 GPUs of a node
  QVERIFY(!run_and_wait(window));
  QVERIFY(!window.running());
  QVERIFY2(window.run_error().contains("problem"), qPrintable(window.run_error()));
  QVERIFY(!window.last_run());
  bool marked = !window.form()->banner_text().isEmpty();
  for (const char* p : {"/parallelism/tp", "/parallelism", "/cluster"})
    marked |= !window.form()->problem_at(p).isEmpty();
  QVERIFY2(marked, "the problem is not shown in the form");
}

void RunTest::a_cancelled_run_gives_control_back() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path("scenarios/examples/gpt3-175b-1024xA100.json")));
  QSignalSpy progress(window.worker(), &RunWorker::progress);
  QSignalSpy ended(&window, &MainWindow::run_ended);
  window.run();
  QVERIFY(window.running());
  QVERIFY(progress.wait(60000));
  window.cancel();
  QVERIFY(ended.wait(60000));
  QCOMPARE(ended.front().front().toBool(), false);
  QVERIFY(!window.running());
  QVERIFY(!window.last_run());
  // Control is back: the next run starts and finishes.
  QVERIFY(window.open_file(source_path("scenarios/examples/small-transformer-2xcpu.json")));
  QVERIFY(run_and_wait(window));
}

}  // namespace dtsim::gui::test

QTEST_MAIN(dtsim::gui::test::RunTest)
#include "run_test.moc"
