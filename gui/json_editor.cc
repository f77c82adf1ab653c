// The raw JSON tab.
#include "gui/json_editor.h"

#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStringList>
#include <QVBoxLayout>

#include "scenarios/json_document.h"

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

std::optional<nlohmann::ordered_json> parse_scenario_text(const std::string& text, QString& error) {
  std::vector<InputProblem> problems;
  if (!parse_json_strictly(text, problems)) {
    QStringList lines;
    for (const InputProblem& p : problems) {
      lines << QString::fromStdString(p.pointer.empty() ? p.message : p.pointer + ": " + p.message);
    }
    error = lines.join(QStringLiteral("; "));
    return std::nullopt;
  }
  // The strict reader accepted it, so this parse cannot fail; it keeps the keys' order.
  nlohmann::ordered_json document = nlohmann::ordered_json::parse(text);
  if (!document.is_object()) {
    error = QStringLiteral("a scenario is a JSON object ({ ... })");
    return std::nullopt;
  }
  return document;
}

std::optional<std::string> read_scenario_file(const QString& path, QString& error) {
  std::string why;
  std::optional<std::string> text = read_input_file(path.toStdString(), why);
  if (!text) error = QStringLiteral("%1 cannot be read: %2").arg(path, QString::fromStdString(why));
  return text;
}

bool JsonEditor::apply() {
  QString error;
  const std::optional<nlohmann::ordered_json> document =
      parse_scenario_text(text_->toPlainText().toStdString(), error);
  if (!document) {
    error_->setText(error);
    return false;
  }
  error_->clear();
  dirty_ = false;
  emit applied(*document);
  return true;
}

}  // namespace dtsim::gui
