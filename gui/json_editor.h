// The raw JSON tab: the document as text; Apply parses it (a syntax error is shown with its
// line and column, and nothing changes) and hands it to the form as one undoable edit.
#pragma once

#include <QWidget>
#include <nlohmann/json.hpp>

class QLabel;
class QPlainTextEdit;

namespace dtsim::gui {

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
