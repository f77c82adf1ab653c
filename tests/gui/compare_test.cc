// Compare: two scenarios, or a pinned run and the next, side by side: the inputs that
// differ, the results with their change, and both timelines on one time axis.
#include <fstream>

#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QTest>
#include <nlohmann/json.hpp>

#include "gui/compare_view.h"
#include "gui/form_editor.h"
#include "gui/summary_view.h"
#include "gui/timeline_view.h"
#include "tests/gui/gui_test_support.h"

namespace dtsim::gui::test {
namespace {

constexpr const char* kLlama = "scenarios/examples/llama3-70b-64xH100.json";

QString cell(QTableWidget* t, int row, int column) {
  return t->item(row, column) ? t->item(row, column)->text() : QString();
}

}  // namespace

class CompareTest : public QObject {
  Q_OBJECT

 private slots:
  // Recent files and other settings go to a test folder, not the user's.
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void two_scenarios_side_by_side();
  void a_pinned_run_against_the_next();
  void flattening_enters_objects_and_lists_of_objects();
};

void CompareTest::two_scenarios_side_by_side() {
  QTemporaryDir dir;
  std::ifstream in(source_path(kLlama).toStdString());
  auto other = nlohmann::ordered_json::parse(in);
  other["parallelism"]["tp"] = 4;
  other["parallelism"]["pp"] = 8;
  const QString other_path = dir.filePath("tp4.json");
  std::ofstream(other_path.toStdString()) << other.dump(2);

  MainWindow window(fields());
  window.resize(1280, 800);
  window.show();
  QVERIFY(window.open_file(source_path(kLlama)));
  QVERIFY(run_and_wait(window));
  CompareView* compare = window.compare_view();
  QSignalSpy ready(compare, &CompareView::b_ready);
  QVERIFY(compare->compare_with_file(other_path));
  QVERIFY(ready.wait(300000));
  QCOMPARE(ready.front().front().toBool(), true);
  QTableWidget* t = compare->table();
  const int tp = compare->row_of(QStringLiteral("parallelism.tp"));
  QVERIFY(tp >= 0);
  QCOMPARE(cell(t, tp, 1), QStringLiteral("8"));
  QCOMPARE(cell(t, tp, 2), QStringLiteral("4"));
  QVERIFY(compare->row_of(QStringLiteral("parallelism.pp")) >= 0);
  QCOMPARE(compare->row_of(QStringLiteral("training.global_batch")), -1);  // the same in both
  const int step = compare->row_of(QStringLiteral("step time"));
  QVERIFY(step >= 0);
  QCOMPARE(cell(t, step, 1), window.summary_view()->card_value(QStringLiteral("Step time")));
  QVERIFY(cell(t, step, 3).endsWith('%'));
  // One time axis: the longer step; zooming one timeline zooms the other.
  TimelineView* a = compare->timeline_a();
  TimelineView* b = compare->timeline_b();
  QCOMPARE(a->time_span(), b->time_span());
  const double span = a->time_span();
  a->set_window(span * 0.2, span * 0.4);
  QCOMPARE(b->window_start(), span * 0.2);
  QCOMPARE(b->window_end(), span * 0.4);
  window.show_view(QStringLiteral("compare"));
  QCoreApplication::processEvents();
  QVERIFY(window.grab().save(screenshot_path(QStringLiteral("gui-compare.png"))));
}

void CompareTest::a_pinned_run_against_the_next() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path(kLlama)));
  QVERIFY(run_and_wait(window));
  const auto first = window.last_run();
  window.compare_view()->set_b(first);  // what "Pin this run as B" does
  window.form()->edit("/training/micro_batch", 2);
  QVERIFY(run_and_wait(window));
  CompareView* compare = window.compare_view();
  const int mb = compare->row_of(QStringLiteral("training.micro_batch"));
  QVERIFY(mb >= 0);
  QCOMPARE(cell(compare->table(), mb, 1), QStringLiteral("2"));  // A: the new run
  QCOMPARE(cell(compare->table(), mb, 2), QStringLiteral("1"));  // B: the pinned one
}

void CompareTest::flattening_enters_objects_and_lists_of_objects() {
  const auto doc = nlohmann::ordered_json::parse(
      R"({"a": {"b": 1, "c": [1, 2]}, "nodes": [{"count": 2}, {"count": 3}], "name": "x"})");
  const auto flat = flatten(doc);
  const std::vector<std::pair<std::string, std::string>> want = {{"a.b", "1"},
                                                                 {"a.c", "[1,2]"},
                                                                 {"nodes.0.count", "2"},
                                                                 {"nodes.1.count", "3"},
                                                                 {"name", "x"}};
  QVERIFY(flat == want);
}

}  // namespace dtsim::gui::test

QTEST_MAIN(dtsim::gui::test::CompareTest)
#include "compare_test.moc"
