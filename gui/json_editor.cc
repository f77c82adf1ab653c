// The raw JSON tab.
#include "gui/json_editor.h"

#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace dtsim::gui {

JsonEditor::JsonEditor(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  text_ = new QPlainTextEdit(this);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text_->setLineWrapMode(QPlainTextEdit::NoWrap);
  layout->addWidget(text_);
  auto* row = new QHBoxLayout;
  error_ = new QLabel(this);
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("color: #b00020;"));
  row->addWidget(error_, 1);
  auto* apply_button = new QPushButton(QStringLiteral("Apply"), this);
  apply_button->setToolTip(QStringLiteral("Replace the form's document with this text"));
  row->addWidget(apply_button);
  layout->addLayout(row);
  connect(apply_button, &QPushButton::clicked, this, [this] { apply(); });
  connect(text_, &QPlainTextEdit::textChanged, this, [this] {
    if (!showing_) dirty_ = true;
  });
}

void JsonEditor::show_document(const nlohmann::ordered_json& document) {
  if (dirty_) return;
  showing_ = true;
  text_->setPlainText(QString::fromStdString(document.dump(2)));
  showing_ = false;
  error_->clear();
}

void JsonEditor::reset(const nlohmann::ordered_json& document) {
  dirty_ = false;
  show_document(document);
}

void JsonEditor::set_text(const QString& text) { text_->setPlainText(text); }

QString JsonEditor::error_text() const { return error_->text(); }

bool JsonEditor::apply() {
  const std::string text = text_->toPlainText().toStdString();
  try {
    nlohmann::ordered_json document = nlohmann::ordered_json::parse(text);
    if (!document.is_object()) {
      error_->setText(QStringLiteral("a scenario is a JSON object ({ ... })"));
      return false;
    }
    error_->clear();
    dirty_ = false;
    emit applied(document);
    return true;
  } catch (const nlohmann::json::parse_error& e) {
    // The byte offset as a line and column, as an editor shows them.
    const size_t at = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    int line = 1, column = 1;
    for (size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    error_->setText(QStringLiteral("not valid JSON at line %1, column %2: %3")
                        .arg(line)
                        .arg(column)
                        .arg(QString::fromUtf8(e.what())));
    return false;
  }
}

}  // namespace dtsim::gui
