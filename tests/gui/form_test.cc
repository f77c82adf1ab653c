// The scenario form: bundled scenarios round-trip through its widgets, every schema key
// has a widget, edits are undoable, bad values and bad files show their problems.
#include <filesystem>
#include <fstream>

#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QTest>
#include <QUndoStack>
#include <nlohmann/json.hpp>

#include "gui/field_cell.h"
#include "gui/form_editor.h"
#include "gui/json_editor.h"
#include "tests/gui/gui_test_support.h"

namespace dtsim::gui::test {
namespace {

using ordered = nlohmann::ordered_json;

ordered read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return ordered::parse(in);
}

// Types `text` into a line edit as a user would and presses Return.
void type_into(QWidget* editor, const QString& text) {
  auto* line = qobject_cast<QLineEdit*>(editor);
  if (!line) {
    if (auto* combo = qobject_cast<QComboBox*>(editor)) line = combo->lineEdit();
  }
  QVERIFY2(line, "the field has no line edit");
  line->setFocus();
  line->selectAll();
  if (text.isEmpty()) {
    QTest::keyClick(line, Qt::Key_Delete);
  } else {
    QTest::keyClicks(line, text);
  }
  QTest::keyClick(line, Qt::Key_Return);
}

std::vector<std::filesystem::path> bundled_scenarios() {
  std::vector<std::filesystem::path> out;
  for (const char* folder :
       {"scenarios/examples", "scenarios/validation", "scenarios/calibration"}) {
    const std::filesystem::path dir = std::filesystem::path(DTSIM_SOURCE_DIR) / folder;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".json") out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

class FormTest : public QObject {
  Q_OBJECT

 private slots:
  // Recent files and other settings go to a test folder, not the user's.
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
  void bundled_scenarios_round_trip_through_the_widgets();
  void every_schema_key_has_a_widget();
  void an_invalid_value_shows_its_error_at_the_field();
  void a_unit_typed_wrongly_is_flagged_as_typed();
  void edits_undo_and_redo();
  void list_items_are_removed_and_restored_in_place();
  void the_json_tab_applies_and_reports_syntax_errors();
  void a_file_that_is_not_json_opens_with_its_error();
  void a_file_the_strict_reader_refuses_opens_with_its_problems();
  void a_key_the_schema_lacks_is_kept_and_flagged();
};

void FormTest::bundled_scenarios_round_trip_through_the_widgets() {
  const auto files = bundled_scenarios();
  QVERIFY(files.size() >= 12);
  for (const auto& path : files) {
    QUndoStack undo;
    FormEditor form(fields(), &undo);
    const ordered document = read_json(path);
    form.load(document);
    // Compared as unordered JSON: the form lists keys in the schema's order.
    const nlohmann::json back = nlohmann::json::parse(form.document_from_widgets().dump());
    const nlohmann::json original = nlohmann::json::parse(document.dump());
    QVERIFY2(back == original,
             qPrintable(QString::fromStdString(path.filename().string() + ": " +
                                               nlohmann::json::diff(original, back).dump())));
  }
}

void FormTest::every_schema_key_has_a_widget() {
  QUndoStack undo;
  FormEditor form(fields(), &undo);
  form.load(ordered::object());
  // Lists show their items' keys once they have an item: press every Add until each list,
  // nested ones too, has one.
  for (int round = 0; round < 32; ++round) {
    bool pressed = false;
    for (FieldCell* cell : form.findChildren<FieldCell*>()) {
      if (cell->role() != CellRole::kList) continue;
      const auto& doc = form.document();
      const ordered::json_pointer p(cell->pointer());
      if (doc.contains(p) && !doc[p].empty()) continue;
      QTest::mouseClick(qobject_cast<QPushButton*>(cell->editor()), Qt::LeftButton);
      pressed = true;
      break;  // the rows are rebuilt after each press
    }
    QCoreApplication::processEvents();
    if (!pressed) break;
  }
  const auto have = form.keys_with_widgets();
  const std::set<std::string> with_widget(have.begin(), have.end());
  const auto all = field_paths(fields());
  QVERIFY(all.size() > 150);
  QStringList missing;
  for (const std::string& path : all) {
    if (!with_widget.count(path)) missing << QString::fromStdString(path);
  }
  QVERIFY2(missing.isEmpty(), qPrintable("keys without a widget: " + missing.join(", ")));
}

void FormTest::an_invalid_value_shows_its_error_at_the_field() {
  MainWindow window(fields());
  window.show();
  QVERIFY(window.open_file(source_path("scenarios/examples/llama3-70b-64xH100.json")));
  QVERIFY(window.form()->problem_at("/training/global_batch").isEmpty());
  type_into(window.form()->editor_at("/training/global_batch"), QStringLiteral("-64"));
  QCOMPARE(window.form()->document()["training"]["global_batch"].get<int>(), -64);
  window.validate_now();
  const QString problem = window.form()->problem_at("/training/global_batch");
  QVERIFY2(!problem.isEmpty(), "no problem shown at /training/global_batch");
  QVERIFY2(problem.contains(">= 1"), qPrintable(problem));
  QVERIFY(window.form()->problem_at("/training/seq_len").isEmpty());
  QVERIFY(window.form()->banner_text().isEmpty());
  // Undo puts the value back, and the problem goes with it.
  window.undo_stack()->undo();
  QCOMPARE(window.form()->document()["training"]["global_batch"].get<int>(), 64);
  window.validate_now();
  QVERIFY(window.form()->problem_at("/training/global_batch").isEmpty());
}

void FormTest::a_unit_typed_wrongly_is_flagged_as_typed() {
  QUndoStack undo;
  FormEditor form(fields(), &undo);
  form.load(read_json(std::filesystem::path(DTSIM_SOURCE_DIR) /
                      "scenarios/examples/llama3-70b-64xH100.json"));
  const std::string pointer = "/cluster/nodes/0/nic_bandwidth";
  auto* line = qobject_cast<QLineEdit*>(form.editor_at(pointer));
  QVERIFY(line);
  QCOMPARE(line->text(), QStringLiteral("400Gbps"));
  line->selectAll();
  QTest::keyClicks(line, QStringLiteral("400Gbsp"));  // not yet committed
  QVERIFY2(!form.problem_at(pointer).isEmpty(), "a unit the parser rejects is not flagged");
  QTest::keyClicks(line, QStringLiteral("\b\bps"));
  QCOMPARE(line->text(), QStringLiteral("400Gbps"));
  QVERIFY(form.problem_at(pointer).isEmpty());
}

void FormTest::edits_undo_and_redo() {
  QUndoStack undo;
  FormEditor form(fields(), &undo);
  const ordered original = read_json(std::filesystem::path(DTSIM_SOURCE_DIR) /
                                     "scenarios/examples/llama3-70b-64xH100.json");
  form.load(original);
  type_into(form.editor_at("/parallelism/tp"), QStringLiteral("4"));
  type_into(form.editor_at("/training/micro_batch"), QStringLiteral("2"));
  QCOMPARE(undo.count(), 2);
  QCOMPARE(form.document()["parallelism"]["tp"].get<int>(), 4);
  undo.undo();
  undo.undo();
  QVERIFY(form.document() == original);
  QCOMPARE(qobject_cast<QLineEdit*>(form.editor_at("/parallelism/tp"))->text(),
           QStringLiteral("8"));
  undo.redo();
  QCOMPARE(form.document()["parallelism"]["tp"].get<int>(), 4);
  // Clearing a field removes the key; undo brings it back.
  type_into(form.editor_at("/training/seq_len"), QString());
  QVERIFY(!form.document()["training"].contains("seq_len"));
  undo.undo();
  QCOMPARE(form.document()["training"]["seq_len"].get<int>(), 8192);
  // A structural edit: remove the node group, then undo.
  form.edit("/cluster/nodes/0", ordered());
  QCoreApplication::processEvents();
  QVERIFY(form.document()["cluster"]["nodes"].empty());
  QVERIFY(!form.item_at("/cluster/nodes/0"));
  undo.undo();
  QCoreApplication::processEvents();
  QVERIFY(form.item_at("/cluster/nodes/0/device"));
}

void FormTest::list_items_are_removed_and_restored_in_place() {
  QUndoStack undo;
  FormEditor form(fields(), &undo);
  form.load(read_json(std::filesystem::path(DTSIM_SOURCE_DIR) /
                      "scenarios/examples/llama3-70b-64xH100.json"));
  const ordered three = ordered::parse(R"([{"count": 1, "device": "A"}, {"count": 2, "device": "B"},
                                           {"count": 3, "device": "C"}])");
  form.edit("/cluster/nodes", three);
  QCoreApplication::processEvents();
  // Remove the middle item with its button; undo puts it back where it was.
  auto* remove = qobject_cast<QPushButton*>(form.editor_at("/cluster/nodes/1"));
  QVERIFY(remove);
  QTest::mouseClick(remove, Qt::LeftButton);
  QCoreApplication::processEvents();
  QCOMPARE(form.document()["cluster"]["nodes"].size(), 2u);
  QCOMPARE(form.document()["cluster"]["nodes"][1]["device"].get<std::string>(), "C");
  undo.undo();
  QCoreApplication::processEvents();
  QVERIFY(form.document()["cluster"]["nodes"] == three);
  // Clearing every key of an item keeps the (empty) item: the list is what holds it.
  form.edit("/cluster/nodes/2/count", ordered());
  form.edit("/cluster/nodes/2/device", ordered());
  QCoreApplication::processEvents();
  QCOMPARE(form.document()["cluster"]["nodes"].size(), 3u);
  QVERIFY(form.document()["cluster"]["nodes"][2].empty());
}

void FormTest::the_json_tab_applies_and_reports_syntax_errors() {
  MainWindow window(fields());
  QVERIFY(window.open_file(source_path("scenarios/examples/llama3-70b-64xH100.json")));
  ordered document = window.form()->document();
  document["parallelism"]["pp"] = 8;
  window.json_editor()->set_text(QString::fromStdString(document.dump(2)));
  QVERIFY(window.json_editor()->apply());
  QCoreApplication::processEvents();
  QCOMPARE(window.form()->document()["parallelism"]["pp"].get<int>(), 8);
  QCOMPARE(qobject_cast<QLineEdit*>(window.form()->editor_at("/parallelism/pp"))->text(),
           QStringLiteral("8"));
  window.json_editor()->set_text(QStringLiteral("{\n  \"name\": \"x\",\n  \"cluster\": [\n}"));
  QVERIFY(!window.json_editor()->apply());
  QVERIFY2(window.json_editor()->error_text().contains("line 4"),
           qPrintable(window.json_editor()->error_text()));
  QCOMPARE(window.form()->document()["parallelism"]["pp"].get<int>(), 8);  // nothing lost
}

void FormTest::a_file_that_is_not_json_opens_with_its_error() {
  QTemporaryDir dir;
  const QString path = dir.filePath("broken.json");
  std::ofstream(path.toStdString()) << "{ \"name\": \"broken\",\n  \"cluster\": { ";
  MainWindow window(fields());
  QVERIFY(window.open_file(path));
  QVERIFY2(window.run_error().contains("not a valid JSON object"), qPrintable(window.run_error()));
  QVERIFY(window.json_editor()->error_text().contains("line 2"));
  QVERIFY(!window.open_file(dir.filePath("missing.json")));
  QVERIFY(window.run_error().contains("cannot be read"));
}

void FormTest::a_file_the_strict_reader_refuses_opens_with_its_problems() {
  // A key written twice (the last one silently won before) and a number beyond a double:
  // the text stays in the JSON tab, unapplied, with the problem at its place.
  QTemporaryDir dir;
  const QString twice = dir.filePath("twice.json");
  std::ofstream(twice.toStdString()) << "{\"name\": \"a\",\n \"training\": {\"micro_batch\": 1, "
                                        "\"micro_batch\": 2}}";
  MainWindow window(fields());
  QVERIFY(window.open_file(twice));
  QVERIFY2(window.run_error().contains("/training/micro_batch: the key \"micro_batch\" is written "
                                       "twice"),
           qPrintable(window.run_error()));
  QVERIFY(!window.json_editor()->apply());
  QVERIFY(window.json_editor()->error_text().contains("written twice"));
  const QString huge = dir.filePath("huge.json");
  std::ofstream(huge.toStdString()) << "{\"name\": \"a\", \"x\": 1e999}";
  QVERIFY(window.open_file(huge));
  QVERIFY2(window.run_error().contains("line 1") &&
               window.run_error().contains("beyond the range of a double"),
           qPrintable(window.run_error()));
}

void FormTest::a_key_the_schema_lacks_is_kept_and_flagged() {
  QTemporaryDir dir;
  ordered document = read_json(std::filesystem::path(DTSIM_SOURCE_DIR) /
                               "scenarios/examples/llama3-70b-64xH100.json");
  document["training"]["bogus_key"] = 3;
  const QString path = dir.filePath("extra.json");
  std::ofstream(path.toStdString()) << document.dump(2);
  MainWindow window(fields());
  QVERIFY(window.open_file(path));
  QVERIFY(window.form()->item_at("/training/bogus_key"));
  QVERIFY2(!window.form()->problem_at("/training/bogus_key").isEmpty(),
           "the unknown key is not flagged");
  QCOMPARE(window.form()->document_from_widgets()["training"]["bogus_key"].get<int>(), 3);
}

}  // namespace dtsim::gui::test

QTEST_MAIN(dtsim::gui::test::FormTest)
#include "form_test.moc"
