// One row's widget in the scenario form: the editor a field's kind calls for (a drop-down,
// a unit-aware line, add/remove buttons for a list), and the problem shown under it.
#pragma once

#include <optional>
#include <string>

#include <QString>
#include <QWidget>
#include <nlohmann/json.hpp>

#include "gui/schema_fields.h"

class QComboBox;
class QLabel;
class QLineEdit;

namespace dtsim::gui {

enum class CellRole { kLeaf, kGroup, kList, kListItem };

// A value as the form shows it: a string as is, anything else as compact JSON.
QString display_text(const nlohmann::ordered_json& value);
// What a field holds for `text`: empty is "not set"; numbers, booleans and JSON are read
// as such, and kept as the string typed when they do not parse (the loader then says what
// the field expects).
std::optional<nlohmann::ordered_json> value_from_text(FieldKind kind, const QString& text);
// The parser's complaint about a quantity ("" when it reads), for the inline check.
std::string quantity_error(std::string_view unit, std::string_view text);

class FieldCell : public QWidget {
  Q_OBJECT

 public:
  FieldCell(const Field& field, CellRole role, std::string pointer,
            const nlohmann::ordered_json* value, QWidget* parent = nullptr);

  const Field& field() const { return field_; }
  CellRole role() const { return role_; }
  const std::string& pointer() const { return pointer_; }
  // The value the editor holds (leaves only; nullopt when empty).
  std::optional<nlohmann::ordered_json> value() const;
  void show_value(const nlohmann::ordered_json* value);
  QWidget* editor() const { return editor_; }
  // Hands what the editor holds to the form if it changed (Enter and leaving the field do).
  void commit();

  // The loader's problem at this row ("" clears it); a unit typed wrongly shows the
  // parser's own message until it is fixed.
  void set_problem(const QString& text);
  QString problem() const;

 signals:
  void edited(const std::string& pointer, const nlohmann::ordered_json& value);  // null: remove
  void add_requested(const std::string& pointer);
  void remove_requested(const std::string& pointer);

 private:
  void check_locally();
  void refresh_problem();

  const Field& field_;
  CellRole role_;
  std::string pointer_;
  QWidget* editor_ = nullptr;
  QLineEdit* line_ = nullptr;   // text, numbers, quantities, JSON, editable presets
  QComboBox* combo_ = nullptr;  // choices, booleans, presets
  QLabel* problem_label_ = nullptr;
  QString loader_problem_;
  QString local_problem_;
  std::optional<nlohmann::ordered_json> shown_;
};

}  // namespace dtsim::gui
