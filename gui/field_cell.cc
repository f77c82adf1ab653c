// The form's row widgets.
#include "gui/field_cell.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "models/model_spec.h"
#include "sim/device_catalog.h"
#include "sim/unit_parse.h"

namespace dtsim::gui {
namespace {

constexpr const char* kNotSet = "(not set)";

QStringList preset_names(Presets presets) {
  QStringList names;
  if (presets == Presets::kDevices) {
    for (const DeviceSpec& d : builtin_devices()) names << QString::fromStdString(d.name);
  } else if (presets == Presets::kModels) {
    for (const models::ModelPreset& p : models::model_presets()) {
      names << QString::fromUtf8(p.name.data(), static_cast<qsizetype>(p.name.size()));
    }
  }
  return names;
}

QString placeholder(const Field& f) {
  if (!f.default_value.is_null())
    return QStringLiteral("default: ") + display_text(f.default_value);
  if (f.kind == FieldKind::kQuantity) return QString::fromStdString(quantity_example(f.unit));
  if (f.required) return QStringLiteral("required");
  return {};
}

}  // namespace

QString display_text(const nlohmann::ordered_json& value) {
  if (value.is_string()) return QString::fromStdString(value.get<std::string>());
  return QString::fromStdString(value.dump());
}

std::optional<nlohmann::ordered_json> value_from_text(FieldKind kind, const QString& text) {
  const std::string s = text.trimmed().toStdString();
  if (s.empty()) return std::nullopt;
  switch (kind) {
    case FieldKind::kInteger:
    case FieldKind::kNumber:
    case FieldKind::kBoolean:
    case FieldKind::kJson: {
      auto parsed = nlohmann::ordered_json::parse(s, nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_discarded()) return parsed;
      return nlohmann::ordered_json(text.toStdString());
    }
    default:
      return nlohmann::ordered_json(text.toStdString());
  }
}

std::string quantity_error(std::string_view unit, std::string_view text) {
  if (unit == "duration") return parse_duration(text).error;
  if (unit == "size") return parse_bytes(text).error;
  if (unit == "bandwidth") return parse_bandwidth(text).error;
  if (unit == "flop_rate") return parse_flop_rate(text).error;
  if (unit == "flop_count") return parse_flops(text).error;
  return {};
}

FieldCell::FieldCell(const Field& field, CellRole role, std::string pointer,
                     const nlohmann::ordered_json* value, QWidget* parent)
    : QWidget(parent), field_(field), role_(role), pointer_(std::move(pointer)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 1, 2, 1);
  layout->setSpacing(1);
  auto* row = new QHBoxLayout;
  row->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(row);
  const QString tip = QString::fromStdString(field.description);
  if (role == CellRole::kList) {
    auto* add = new QPushButton(QStringLiteral("Add"), this);
    add->setToolTip(QStringLiteral("Append an item to ") + QString::fromStdString(field.key));
    connect(add, &QPushButton::clicked, this, [this] { emit add_requested(pointer_); });
    row->addWidget(add);
    row->addStretch();
    editor_ = add;
  } else if (role == CellRole::kListItem) {
    auto* remove = new QPushButton(QStringLiteral("Remove"), this);
    connect(remove, &QPushButton::clicked, this, [this] { emit remove_requested(pointer_); });
    row->addWidget(remove);
    row->addStretch();
    editor_ = remove;
  } else if (role == CellRole::kLeaf) {
    if (field.kind == FieldKind::kEnum || field.kind == FieldKind::kBoolean) {
      combo_ = new QComboBox(this);
      combo_->addItem(field.default_value.is_null()
                          ? QString::fromUtf8(kNotSet)
                          : QStringLiteral("(default: %1)").arg(display_text(field.default_value)));
      if (field.kind == FieldKind::kBoolean) {
        combo_->addItems({QStringLiteral("true"), QStringLiteral("false")});
      } else {
        for (const std::string& c : field.choices) combo_->addItem(QString::fromStdString(c));
      }
      connect(combo_, &QComboBox::activated, this, [this] { commit(); });
      editor_ = combo_;
    } else if (field.presets != Presets::kNone) {
      combo_ = new QComboBox(this);
      combo_->setEditable(true);
      combo_->addItems(preset_names(field.presets));
      combo_->setInsertPolicy(QComboBox::NoInsert);
      line_ = combo_->lineEdit();
      connect(combo_, &QComboBox::activated, this, [this] { commit(); });
      editor_ = combo_;
    } else {
      line_ = new QLineEdit(this);
      editor_ = line_;
    }
    if (line_) {
      line_->setPlaceholderText(placeholder(field));
      connect(line_, &QLineEdit::editingFinished, this, [this] { commit(); });
      if (field.kind == FieldKind::kQuantity) {
        connect(line_, &QLineEdit::textEdited, this, [this] { check_locally(); });
      }
    }
    if (combo_ && !line_) combo_->setToolTip(placeholder(field));
    row->addWidget(editor_, 1);
  }
  if (editor_) editor_->setToolTip(tip);
  problem_label_ = new QLabel(this);
  problem_label_->setWordWrap(true);
  problem_label_->setStyleSheet(QStringLiteral("color: #b00020;"));
  problem_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  problem_label_->hide();
  layout->addWidget(problem_label_);
  show_value(value);
}

void FieldCell::show_value(const nlohmann::ordered_json* value) {
  shown_ = value ? std::optional(*value) : std::nullopt;
  if (role_ != CellRole::kLeaf) return;
  const QString text = value ? display_text(*value) : QString();
  if (combo_ && !line_) {
    int index = text.isEmpty() ? 0 : combo_->findText(text);
    if (index < 0) {  // a value the schema does not offer: shown, so the problem is visible
      combo_->addItem(text);
      index = combo_->count() - 1;
    }
    combo_->setCurrentIndex(index);
  } else if (line_) {
    line_->setText(text);
  }
  check_locally();
}

std::optional<nlohmann::ordered_json> FieldCell::value() const {
  if (role_ != CellRole::kLeaf) return std::nullopt;
  if (combo_ && !line_) {
    if (combo_->currentIndex() <= 0) return std::nullopt;
    return value_from_text(field_.kind, combo_->currentText());
  }
  return value_from_text(field_.kind, line_->text());
}

void FieldCell::commit() {
  if (role_ != CellRole::kLeaf) return;  // groups and lists hold no value of their own
  const auto now = value();
  if (now == shown_) return;
  shown_ = now;
  check_locally();
  emit edited(pointer_, now ? *now : nlohmann::ordered_json());
}

void FieldCell::check_locally() {
  local_problem_.clear();
  if (field_.kind == FieldKind::kQuantity && line_ && !line_->text().trimmed().isEmpty()) {
    const std::string text = line_->text().toStdString();
    local_problem_ = QString::fromStdString(quantity_error(field_.unit, text));
  }
  refresh_problem();
}

void FieldCell::set_problem(const QString& text) {
  loader_problem_ = text;
  refresh_problem();
}

QString FieldCell::problem() const {
  return local_problem_.isEmpty() ? loader_problem_ : local_problem_;
}

void FieldCell::refresh_problem() {
  const QString text = problem();
  problem_label_->setText(text);
  problem_label_->setVisible(!text.isEmpty());
  if (editor_ && role_ == CellRole::kLeaf) {
    editor_->setStyleSheet(text.isEmpty() ? QString()
                                          : QStringLiteral("border: 1px solid #b00020;"));
  }
}

}  // namespace dtsim::gui
