// The scenario form: rows from the schema's fields, edits as undoable commands.
#include "gui/form_editor.h"

#include <functional>
#include <set>

#include <QApplication>
#include <QHeaderView>
#include <QLabel>
#include <QTimer>
#include <QTreeWidget>
#include <QUndoCommand>
#include <QUndoStack>
#include <QVBoxLayout>

#include "gui/field_cell.h"

namespace dtsim::gui {
namespace {

using json = nlohmann::ordered_json;

constexpr int kPointerRole = Qt::UserRole;
constexpr int kKeyRole = Qt::UserRole + 1;

// The pointer to `key` under `pointer`, "~" and "/" escaped (RFC 6901).
std::string child_pointer(const std::string& pointer, const std::string& key) {
  return (json::json_pointer(pointer) / key).to_string();
}

std::string parent_of(const std::string& pointer) {
  const size_t slash = pointer.rfind('/');
  return slash == std::string::npos ? std::string() : pointer.substr(0, slash);
}

// A few words that tell list items apart ("H100 x 8", a task's id).
QString item_hint(const json& item) {
  if (!item.is_object()) return {};
  for (const char* key : {"name", "id", "device", "op", "from"}) {
    if (item.contains(key) && item[key].is_string())
      return QString::fromStdString(item[key].get<std::string>());
  }
  return {};
}

class SetValueCommand : public QUndoCommand {
 public:
  SetValueCommand(FormEditor* editor, std::string pointer, json before, json after)
      : editor_(editor),
        pointer_(std::move(pointer)),
        before_(std::move(before)),
        after_(std::move(after)) {
    setText(QString::fromStdString(pointer_.empty() ? std::string("edit the document")
                                                    : "set " + pointer_));
  }
  void redo() override { editor_->apply(pointer_, after_); }
  void undo() override { editor_->apply(pointer_, before_); }

 private:
  FormEditor* editor_;
  std::string pointer_;
  json before_;
  json after_;
};

}  // namespace

FormEditor::FormEditor(const Field& root, QUndoStack* undo, QWidget* parent)
    : QWidget(parent), root_(root), undo_(undo) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  banner_ = new QLabel(this);
  banner_->setWordWrap(true);
  banner_->setStyleSheet(QStringLiteral("color: #b00020; padding: 4px;"));
  banner_->hide();
  layout->addWidget(banner_);
  tree_ = new QTreeWidget(this);
  tree_->setColumnCount(2);
  tree_->setHeaderLabels({QStringLiteral("Key"), QStringLiteral("Value")});
  tree_->setUniformRowHeights(false);
  tree_->setSelectionMode(QAbstractItemView::NoSelection);
  tree_->header()->setSectionResizeMode(0, QHeaderView::Interactive);
  tree_->header()->setStretchLastSection(true);
  tree_->setColumnWidth(0, 220);
  layout->addWidget(tree_);
  document_ = json::object();
  rebuild();
}

void FormEditor::load(const json& document) {
  document_ = document;
  undo_->clear();
  rebuild();
  emit document_changed();
}

void FormEditor::edit(const std::string& pointer, const json& value) {
  const json::json_pointer p(pointer);
  const json before = pointer.empty() ? document_ : (document_.contains(p) ? document_[p] : json());
  if (before == value) return;
  undo_->push(new SetValueCommand(this, pointer, before, value));
}

void FormEditor::apply(const std::string& pointer, const json& value) {
  bool structural = true;
  if (pointer.empty()) {
    document_ = value.is_null() ? json::object() : value;
  } else {
    const json::json_pointer p(pointer);
    const bool parent_existed = document_.contains(p.parent_pointer());
    FieldCell* cell = cell_for(pointer);
    if (value.is_null()) {
      if (document_.contains(p)) {
        json& parent = document_[p.parent_pointer()];
        if (parent.is_object()) {
          parent.erase(p.back());
        } else if (parent.is_array()) {
          parent.erase(parent.begin() + std::stol(p.back()));
        }
      }
      bool pruned = false;
      // An object left empty goes too, up to the first that is not empty or sits in a list
      // (a list's items stay: removing one is an edit of the list).
      for (json::json_pointer up = p.parent_pointer(); !up.empty(); up = up.parent_pointer()) {
        if (!document_.contains(up) || !document_[up].is_object() || !document_[up].empty()) break;
        json& holder = document_[up.parent_pointer()];
        if (!holder.is_object()) break;
        holder.erase(up.back());
        pruned = true;
      }
      structural = !(cell && cell->role() == CellRole::kLeaf) || pruned;
    } else {
      document_[p] = value;
      structural = !(cell && cell->role() == CellRole::kLeaf) || !parent_existed;
    }
    if (!structural) cell->show_value(document_.contains(p) ? &document_[p] : nullptr);
  }
  if (structural) {
    // The edit may come from a row's own signal: rebuild after it returns (once for all
    // the edits of this turn of the event loop).
    if (!rebuild_pending_) {
      rebuild_pending_ = true;
      QTimer::singleShot(0, this, [this] {
        rebuild_pending_ = false;
        rebuild();
      });
    }
  }
  emit document_changed();
}

void FormEditor::rebuild() {
  std::set<std::string> expanded;
  for (const auto& [pointer, item] : items_) {
    if (item->isExpanded()) expanded.insert(pointer);
  }
  const bool first = items_.empty();
  tree_->clear();
  cells_.clear();
  items_.clear();
  paths_.clear();
  add_object_rows(nullptr, root_, &document_, "", "");
  for (const auto& [pointer, item] : items_) {
    const bool present = document_.contains(json::json_pointer(pointer));
    // First view: what the document has, two levels deep.
    const bool open = first || expanded.empty()
                          ? present && std::count(pointer.begin(), pointer.end(), '/') <= 2
                          : expanded.count(pointer) > 0;
    item->setExpanded(open);
  }
}

void FormEditor::add_object_rows(QTreeWidgetItem* item, const Field& field, const json* value,
                                 const std::string& pointer, const std::string& path) {
  for (const Field& child : field.children) {
    const json* v =
        value && value->is_object() && value->contains(child.key) ? &(*value)[child.key] : nullptr;
    add_rows(item, child, v, child_pointer(pointer, child.key),
             path.empty() ? child.key : path + "." + child.key);
  }
  if (!value || !value->is_object()) return;
  for (auto it = value->begin(); it != value->end(); ++it) {
    if (field.child(it.key())) continue;
    add_rows(item, unknown_field(it.key()), &it.value(), child_pointer(pointer, it.key()), "");
  }
}

void FormEditor::add_rows(QTreeWidgetItem* parent, const Field& field, const json* value,
                          const std::string& pointer, const std::string& path) {
  // A group or list the file gave as something else is shown as JSON text, so that
  // nothing of it is lost and its problem has a row.
  const bool object_ok = !value || value->is_object();
  const bool array_ok = !value || value->is_array();
  const Field& f = (field.kind == FieldKind::kObject && !object_ok) ||
                           (field.kind == FieldKind::kObjectArray && !array_ok)
                       ? unknown_field(field.key)
                       : field;
  const CellRole role = f.kind == FieldKind::kObject        ? CellRole::kGroup
                        : f.kind == FieldKind::kObjectArray ? CellRole::kList
                                                            : CellRole::kLeaf;
  auto* item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(tree_);
  item->setText(0, QString::fromStdString(field.key));
  item->setToolTip(0, QString::fromStdString(field.description));
  item->setData(0, kPointerRole, QString::fromStdString(pointer));
  item->setData(0, kKeyRole, QString::fromStdString(field.key));
  auto* cell = new FieldCell(f, role, pointer, value, tree_);
  tree_->setItemWidget(item, 1, cell);
  cells_[pointer] = cell;
  items_[pointer] = item;
  if (!path.empty()) paths_.push_back(path);
  connect(cell, &FieldCell::edited, this,
          [this](const std::string& p, const json& v) { edit(p, v); });
  connect(cell, &FieldCell::add_requested, this, [this](const std::string& p) {
    const json::json_pointer ptr(p);
    json list =
        document_.contains(ptr) && document_[ptr].is_array() ? document_[ptr] : json::array();
    list.push_back(json::object());
    edit(p, list);
  });
  if (role == CellRole::kGroup) add_object_rows(item, f, value, pointer, path);
  if (role != CellRole::kList || !value) return;
  for (size_t i = 0; i < value->size(); ++i) {
    const json& element = (*value)[i];
    const std::string element_pointer = pointer + "/" + std::to_string(i);
    auto* child = new QTreeWidgetItem(item);
    const QString hint = item_hint(element);
    child->setText(0,
                   QStringLiteral("[%1]%2").arg(i).arg(hint.isEmpty() ? QString() : "  " + hint));
    child->setData(0, kPointerRole, QString::fromStdString(element_pointer));
    // An item that is not an object is shown as its JSON text.
    const bool object = element.is_object();
    auto* element_cell =
        object ? new FieldCell(f, CellRole::kListItem, element_pointer, &element, tree_)
               : new FieldCell(unknown_field(field.key), CellRole::kLeaf, element_pointer, &element,
                               tree_);
    tree_->setItemWidget(child, 1, element_cell);
    cells_[element_pointer] = element_cell;
    items_[element_pointer] = child;
    // Removing an item edits the whole list, so that undo puts it back where it was.
    connect(element_cell, &FieldCell::remove_requested, this,
            [this, pointer, i](const std::string&) {
              const json::json_pointer list_pointer(pointer);
              if (!document_.contains(list_pointer) || !document_[list_pointer].is_array()) return;
              json list = document_[list_pointer];
              if (i < list.size()) list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
              edit(pointer, list);
            });
    connect(element_cell, &FieldCell::edited, this,
            [this](const std::string& p, const json& v) { edit(p, v); });
    if (object) add_object_rows(child, f, &element, element_pointer, path + "[]");
  }
}

// A field the schema does not have, for a key a file brings anyway (the loader rejects
// it; the form shows it so that nothing is lost).
const Field& FormEditor::unknown_field(const std::string& key) {
  for (const Field& f : extra_fields_) {
    if (f.key == key) return f;
  }
  Field f;
  f.key = key;
  f.description = "Not a key of the scenario schema.";
  f.kind = FieldKind::kJson;
  return extra_fields_.emplace_back(std::move(f));
}

void FormEditor::commit_pending() {
  for (QWidget* w = QApplication::focusWidget(); w; w = w->parentWidget()) {
    if (auto* cell = qobject_cast<FieldCell*>(w)) {
      cell->commit();
      return;
    }
  }
}

FieldCell* FormEditor::cell_for(const std::string& pointer) const {
  const auto it = cells_.find(pointer);
  return it == cells_.end() ? nullptr : it->second;
}

void FormEditor::show_problems(const std::vector<InputProblem>& problems) {
  for (const auto& [pointer, cell] : cells_) cell->set_problem({});
  std::map<std::string, QStringList> at;
  QStringList whole;
  for (const InputProblem& p : problems) {
    std::string pointer = p.pointer;
    while (!pointer.empty() && !cells_.count(pointer)) pointer = parent_of(pointer);
    const QString text = pointer == p.pointer
                             ? QString::fromStdString(p.message)
                             : QString::fromStdString(p.pointer + ": " + p.message);
    if (pointer.empty()) {
      whole << text;
    } else {
      at[pointer] << text;
    }
  }
  for (const auto& [pointer, texts] : at) {
    cells_.at(pointer)->set_problem(texts.join('\n'));
    // Open the rows down to the problem so that it is seen.
    for (QTreeWidgetItem* up = items_.at(pointer)->parent(); up; up = up->parent())
      up->setExpanded(true);
  }
  for (const auto& [pointer, item] : items_) item->setSizeHint(1, cells_.at(pointer)->sizeHint());
  banner_->setText(whole.join('\n'));
  banner_->setVisible(!whole.isEmpty());
}

QString FormEditor::problem_at(const std::string& pointer) const {
  const FieldCell* cell = cell_for(pointer);
  return cell ? cell->problem() : QString();
}

QWidget* FormEditor::editor_at(const std::string& pointer) const {
  const FieldCell* cell = cell_for(pointer);
  return cell ? cell->editor() : nullptr;
}

QTreeWidgetItem* FormEditor::item_at(const std::string& pointer) const {
  const auto it = items_.find(pointer);
  return it == items_.end() ? nullptr : it->second;
}

QString FormEditor::banner_text() const { return banner_->text(); }

std::vector<std::string> FormEditor::keys_with_widgets() const { return paths_; }

json FormEditor::document_from_widgets() const {
  std::function<std::optional<json>(QTreeWidgetItem*)> collect =
      [&](QTreeWidgetItem* item) -> std::optional<json> {
    const auto* cell = qobject_cast<FieldCell*>(tree_->itemWidget(item, 1));
    if (!cell) return std::nullopt;
    if (cell->role() == CellRole::kLeaf) return cell->value();
    const bool present = document_.contains(json::json_pointer(cell->pointer()));
    if (cell->role() == CellRole::kList) {
      json list = json::array();
      for (int i = 0; i < item->childCount(); ++i) {
        if (auto v = collect(item->child(i))) list.push_back(*v);
      }
      return present || !list.empty() ? std::optional(list) : std::nullopt;
    }
    json object = json::object();
    for (int i = 0; i < item->childCount(); ++i) {
      QTreeWidgetItem* child = item->child(i);
      if (auto v = collect(child)) {
        object[child->data(0, kKeyRole).toString().toStdString()] = *v;
      }
    }
    if (cell->role() == CellRole::kListItem) return object;
    return present || !object.empty() ? std::optional(object) : std::nullopt;
  };
  json out = json::object();
  for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* item = tree_->topLevelItem(i);
    if (auto v = collect(item)) out[item->data(0, kKeyRole).toString().toStdString()] = *v;
  }
  return out;
}

}  // namespace dtsim::gui
