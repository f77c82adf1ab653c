// The raw JSON tab: the document as text; Apply parses it strictly (a syntax error is shown
// with its line and column, a key written twice at its pointer, and nothing changes) and
// hands it to the form as one undoable edit.
#pragma once

#include <QWidget>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

class QLabel;
class QPlainTextEdit;

namespace dtsim::gui {

// A scenario's text as the GUI edits it: parsed by dtsim's strict reader (the loader's:
// a number beyond a double, a key written twice, nesting too deep are errors with their
// place), in the key order of the text. Nothing, with `error` set, when it is not a JSON
// object or does not read strictly.
std::optional<nlohmann::ordered_json> parse_scenario_text(const std::string& text, QString& error);

// A scenario file's text, read within dtsim's input size limit (a device or a pipe does
// not read on without end). Nothing, with `error` set, when it cannot be read.
std::optional<std::string> read_scenario_file(const QString& path, QString& error);

class JsonEditor : public QWidget {
  Q_OBJECT

 public:
  explicit JsonEditor(QWidget* parent = nullptr);
  // Shows `document` unless the text has edits not applied yet.
  void show_document(const nlohmann::ordered_json& document);
  // Shows `document`, dropping edits not applied (a file was opened).
  void reset(const nlohmann::ordered_json& document);
  QString error_text() const;
  void set_text(const QString& text);  // as if typed
  bool apply();                        // false (and the error shown) when the text does not parse

 signals:
  void applied(const nlohmann::ordered_json& document);

 private:
  QPlainTextEdit* text_;
  QLabel* error_;
  bool dirty_ = false;
  bool showing_ = false;
};

}  // namespace dtsim::gui
