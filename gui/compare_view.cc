// Comparing two runs.
#include "gui/compare_view.h"

#include <map>

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "gui/figures.h"
#include "gui/json_editor.h"
#include "gui/run_worker.h"
#include "gui/sweep_runner.h"
#include "gui/timeline_view.h"

namespace dtsim::gui {
namespace {

void flatten_into(const nlohmann::ordered_json& value, const std::string& key,
                  std::vector<std::pair<std::string, std::string>>& out) {
  const bool objects =
      value.is_array() && !value.empty() &&
      std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_object(); });
  if (value.is_object() || objects) {
    size_t i = 0;
    for (auto it = value.begin(); it != value.end(); ++it, ++i) {
      const std::string child = value.is_object() ? it.key() : std::to_string(i);
      flatten_into(it.value(), key.empty() ? child : key + "." + child, out);
    }
    return;
  }
  out.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
}

}  // namespace

std::vector<std::pair<std::string, std::string>> flatten(const nlohmann::ordered_json& document) {
  std::vector<std::pair<std::string, std::string>> out;
  flatten_into(document, "", out);
  return out;
}

CompareView::CompareView(QWidget* parent) : QWidget(parent), worker_(new RunWorker(this)) {
  auto* layout = new QVBoxLayout(this);
  auto* controls = new QHBoxLayout;
  open_ = new QPushButton(QStringLiteral("Compare with a scenario…"), this);
  pin_ = new QPushButton(QStringLiteral("Pin this run as B"), this);
  pin_->setToolTip(QStringLiteral("Keep the current run to compare the next one with it"));
  controls->addWidget(open_);
  controls->addWidget(pin_);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  controls->addWidget(status_, 1);
  layout->addLayout(controls);
  auto* split = new QSplitter(Qt::Vertical, this);
  table_ = new QTableWidget(0, 4, split);
  table_->setHorizontalHeaderLabels(
      {QStringLiteral(""), QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("B vs A")});
  for (int c = 0; c < 3; ++c)
    table_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  auto* timelines = new QWidget(split);
  auto* tl = new QVBoxLayout(timelines);
  tl->setContentsMargins(0, 0, 0, 0);
  label_a_ = new QLabel(timelines);
  timeline_a_ = new TimelineView(timelines);
  label_b_ = new QLabel(timelines);
  timeline_b_ = new TimelineView(timelines);
  tl->addWidget(label_a_);
  tl->addWidget(timeline_a_, 1);
  tl->addWidget(label_b_);
  tl->addWidget(timeline_b_, 1);
  split->addWidget(table_);
  split->addWidget(timelines);
  split->setSizes({300, 400});
  layout->addWidget(split, 1);
  // Zoom and pan move both timelines.
  connect(timeline_a_, &TimelineView::window_changed, timeline_b_, &TimelineView::set_window);
  connect(timeline_b_, &TimelineView::window_changed, timeline_a_, &TimelineView::set_window);
  connect(open_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, QStringLiteral("Compare with a scenario"), QString(),
                                     QStringLiteral("Scenarios (*.json)"));
    if (!path.isEmpty()) compare_with_file(path);
  });
  connect(pin_, &QPushButton::clicked, this, [this] {
    if (a_) set_b(a_);
  });
  connect(worker_, &RunWorker::finished, this, [this](std::shared_ptr<const RunData> b) {
    set_b(std::move(b));
    emit b_ready(true);
  });
  connect(worker_, &RunWorker::rejected, this,
          [this](const QString& source, const std::vector<InputProblem>& problems) {
            status_->setText(
                QStringLiteral("B (%1) is not a valid scenario: %2")
                    .arg(source, QString::fromStdString(describe_problems(problems, "; "))));
            emit b_ready(false);
          });
  connect(worker_, &RunWorker::failed, this, [this](const QString& message) {
    status_->setText(QStringLiteral("B: ") + message);
    emit b_ready(false);
  });
  connect(worker_, &RunWorker::cancelled, this, [this] { emit b_ready(false); });
  refresh();
}

bool CompareView::running() const { return worker_->running(); }

void CompareView::set_a(std::shared_ptr<const RunData> a) {
  a_ = std::move(a);
  refresh();
}

void CompareView::set_b(std::shared_ptr<const RunData> b) {
  b_ = std::move(b);
  refresh();
}

bool CompareView::compare_with_file(const QString& path) {
  QString error;
  const std::optional<std::string> text = read_scenario_file(path, error);
  const std::optional<nlohmann::ordered_json> document =
      text ? parse_scenario_text(*text, error) : std::nullopt;
  if (!document) {
    status_->setText(QStringLiteral("%1: not a readable JSON scenario: %2").arg(path, error));
    return false;
  }
  status_->setText(QStringLiteral("Running B: %1…").arg(path));
  return worker_->start(*document, path.toStdString());
}

int CompareView::row_of(const QString& key) const {
  for (int r = 0; r < table_->rowCount(); ++r) {
    if (table_->item(r, 0) && table_->item(r, 0)->text() == key) return r;
  }
  return -1;
}

void CompareView::refresh() {
  table_->setRowCount(0);
  auto add = [&](const QString& key, const QString& a, const QString& b, const QString& delta,
                 bool heading = false) {
    const int r = table_->rowCount();
    table_->insertRow(r);
    const QString cells[] = {key, a, b, delta};
    for (int c = 0; c < 4; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (heading) {
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
        item->setBackground(QColor(0xee, 0xf0, 0xf3));
      }
      table_->setItem(r, c, item);
    }
  };
  auto name = [](const std::shared_ptr<const RunData>& d) {
    return d ? QString::fromStdString(d->summary.value("scenario", "") + "  (" + d->source + ")")
             : QStringLiteral("—");
  };
  label_a_->setText(QStringLiteral("<b>A</b>  ") + name(a_).toHtmlEscaped());
  label_b_->setText(QStringLiteral("<b>B</b>  ") + name(b_).toHtmlEscaped());
  if (!a_ || !b_) {
    if (!worker_->running()) {
      status_->setText(
          a_ ? QStringLiteral(
                   "Choose B: another scenario, or pin this run and change the scenario.")
             : QStringLiteral("Run the scenario (A), then choose what to compare it with (B)."));
    }
    timeline_a_->clear();
    timeline_b_->clear();
    return;
  }
  status_->setText(
      QStringLiteral("A: the open scenario's run · B: %1").arg(QString::fromStdString(b_->source)));
  add(QStringLiteral("Inputs that differ"), {}, {}, {}, true);
  std::map<std::string, std::pair<std::string, std::string>> keys;
  for (const auto& [k, v] : flatten(a_->document)) keys[k].first = v;
  for (const auto& [k, v] : flatten(b_->document)) keys[k].second = v;
  int differ = 0;
  for (const auto& [k, v] : keys) {
    if (v.first == v.second) continue;
    ++differ;
    add(QString::fromStdString(k),
        v.first.empty() ? QStringLiteral("(not set)") : QString::fromStdString(v.first),
        v.second.empty() ? QStringLiteral("(not set)") : QString::fromStdString(v.second), {});
  }
  if (differ == 0) add(QStringLiteral("(none: the same scenario)"), {}, {}, {});
  add(QStringLiteral("Results"), {}, {}, {}, true);
  const PointFigures fa = figures_of(a_->summary), fb = figures_of(b_->summary);
  auto ratio = [](double a, double b) {
    return a > 0 ? QStringLiteral("%1%2 %").arg(b >= a ? "+" : "").arg((b / a - 1) * 100, 0, 'f', 1)
                 : QString();
  };
  add(QStringLiteral("step time"), seconds_text(fa.step_s), seconds_text(fb.step_s),
      ratio(fa.step_s, fb.step_s));
  if (a_->training() || b_->training()) {
    add(QStringLiteral("throughput"), rate_text(fa.tokens_per_s, QStringLiteral("tokens")),
        rate_text(fb.tokens_per_s, QStringLiteral("tokens")),
        ratio(fa.tokens_per_s, fb.tokens_per_s));
    add(QStringLiteral("MFU"), percent_text(fa.mfu), percent_text(fb.mfu), ratio(fa.mfu, fb.mfu));
    add(QStringLiteral("peak memory"), bytes_text(fa.peak_bytes), bytes_text(fb.peak_bytes),
        ratio(fa.peak_bytes, fb.peak_bytes));
  }
  add(QStringLiteral("ranks out of memory"), QString::number(fa.oom_ranks),
      QString::number(fb.oom_ranks), {});
  add(QStringLiteral("ranks"), QString::number(a_->scenario->cluster.num_ranks()),
      QString::number(b_->scenario->cluster.num_ranks()), {});
  // One time axis: the longer of the two steps.
  timeline_a_->show_run(a_);
  timeline_b_->show_run(b_);
  const double span = std::max(timeline_a_->time_span(), timeline_b_->time_span());
  timeline_a_->set_time_span(span);
  timeline_b_->set_time_span(span);
}

}  // namespace dtsim::gui
