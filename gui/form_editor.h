// The scenario form: one row per key of the schema (scenario_fields), a widget per row
// chosen by what the key holds (a drop-down for a choice or a catalog name, a unit-aware
// field for "400Gbps", a list with add and remove for node groups), every edit an undoable
// command on the document, and the loader's problems shown under the fields they name.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include <QString>
#include <QWidget>
#include <nlohmann/json.hpp>

#include "gui/schema_fields.h"
#include "sim/input_error.h"

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;
class QUndoStack;

namespace dtsim::gui {

class FieldCell;

class FormEditor : public QWidget {
  Q_OBJECT

 public:
  // `root` (the schema's fields) and `undo` must outlive the editor.
  FormEditor(const Field& root, QUndoStack* undo, QWidget* parent = nullptr);

  // Shows `document` (rebuilding every row); clears the undo history.
  void load(const nlohmann::ordered_json& document);
  const nlohmann::ordered_json& document() const { return document_; }
  // The document read back from the rows' widgets alone (what the form would save).
  nlohmann::ordered_json document_from_widgets() const;

  // Sets the value at `pointer` (RFC 6901) as an edit would: one undoable command; a
  // null value removes the key.
  void edit(const std::string& pointer, const nlohmann::ordered_json& value);
  // Commits what the focused field holds but has not committed yet (text typed without
  // Enter): the window calls it before it runs, saves or replaces the document.
  void commit_pending();
  // Applies a value without recording it (what undo and redo call).
  void apply(const std::string& pointer, const nlohmann::ordered_json& value);

  // Marks each problem at the row of its pointer, or of the nearest key above it that has
  // a row; problems of the whole document go to the banner above the rows.
  void show_problems(const std::vector<InputProblem>& problems);
  void clear_problems() { show_problems({}); }

  // For tests and the main window: the row at a pointer, its problem text and editor.
  QString problem_at(const std::string& pointer) const;
  QWidget* editor_at(const std::string& pointer) const;
  QTreeWidgetItem* item_at(const std::string& pointer) const;
  QString banner_text() const;
  // The schema keys that have a row (dotted, "[]" for list items), for the coverage check.
  std::vector<std::string> keys_with_widgets() const;

 signals:
  void document_changed();

 private:
  void rebuild();
  void add_rows(QTreeWidgetItem* parent, const Field& field, const nlohmann::ordered_json* value,
                const std::string& pointer, const std::string& path);
  void add_object_rows(QTreeWidgetItem* item, const Field& field,
                       const nlohmann::ordered_json* value, const std::string& pointer,
                       const std::string& path);
  FieldCell* cell_for(const std::string& pointer) const;
  const Field& unknown_field(const std::string& key);

  const Field& root_;
  QUndoStack* undo_;
  nlohmann::ordered_json document_;
  QLabel* banner_;
  QTreeWidget* tree_;
  std::map<std::string, FieldCell*> cells_;        // by JSON pointer
  std::map<std::string, QTreeWidgetItem*> items_;  // by JSON pointer
  std::vector<std::string> paths_;                 // schema paths with a row
  std::deque<Field> extra_fields_;  // keys the schema lacks (deque: references stay valid)
  bool rebuild_pending_ = false;
};

}  // namespace dtsim::gui
