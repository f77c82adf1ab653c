// The summary cards.
#include "gui/summary_view.h"

#include <algorithm>
#include <set>

#include <QFrame>
#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QVBoxLayout>

#include "gui/figures.h"
#include "reports/headline_figures.h"

namespace dtsim::gui {
namespace {

using json = nlohmann::ordered_json;

double number(const json& j, const char* key, double otherwise = 0) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : otherwise;
}

// "0-7, 12, 15": ranks written as ranges.
QString rank_ranges(const std::set<int>& ranks, size_t at_most = 12) {
  QStringList parts;
  for (auto it = ranks.begin(); it != ranks.end();) {
    int first = *it, last = *it;
    for (++it; it != ranks.end() && *it == last + 1; ++it) last = *it;
    parts << (first == last ? QString::number(first)
                            : QStringLiteral("%1-%2").arg(first).arg(last));
    if (parts.size() == static_cast<qsizetype>(at_most) && it != ranks.end()) {
      parts << QStringLiteral("…");
      break;
    }
  }
  return parts.join(", ");
}

}  // namespace

SummaryView::SummaryView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  heading_ = new QLabel(this);
  heading_->setWordWrap(true);
  heading_->setStyleSheet(QStringLiteral("font-size: 13pt; font-weight: 600;"));
  layout->addWidget(heading_);
  cards_ = new QGridLayout;
  cards_->setSpacing(10);
  layout->addLayout(cards_);
  notes_ = new QLabel(this);
  notes_->setWordWrap(true);
  notes_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(notes_);
  layout->addStretch();
  clear();
}

void SummaryView::clear() {
  while (QLayoutItem* item = cards_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  heading_->setText(QStringLiteral("Run the scenario to see its figures (Run, or Ctrl+R)."));
  notes_->clear();
}

void SummaryView::add_card(const QString& title, const QString& value, const QString& detail,
                           bool alarm, double fill) {
  auto* card = new QFrame(this);
  card->setFrameShape(QFrame::StyledPanel);
  card->setProperty("title", title);
  card->setMinimumWidth(250);
  card->setStyleSheet(alarm
                          ? QStringLiteral("QFrame { background: #fdecea; border-radius: 6px; }")
                          : QStringLiteral("QFrame { background: #f3f6fa; border-radius: 6px; }"));
  auto* v = new QVBoxLayout(card);
  auto* t = new QLabel(title, card);
  t->setStyleSheet(QStringLiteral("color: #555; font-size: 9pt; background: transparent;"));
  auto* big = new QLabel(value, card);
  big->setObjectName(QStringLiteral("value"));
  big->setStyleSheet(QStringLiteral("font-size: 20pt; font-weight: 600; background: transparent;") +
                     (alarm ? QStringLiteral("color: #b00020;") : QString()));
  auto* d = new QLabel(detail, card);
  d->setObjectName(QStringLiteral("detail"));
  d->setWordWrap(true);
  d->setStyleSheet(QStringLiteral("color: #333; background: transparent;"));
  v->addWidget(t);
  v->addWidget(big);
  if (fill >= 0) {
    auto* bar = new QProgressBar(card);
    bar->setRange(0, 1000);
    bar->setValue(static_cast<int>(std::min(fill, 1.0) * 1000));
    bar->setTextVisible(false);
    bar->setMaximumHeight(8);
    v->addWidget(bar);
  }
  v->addWidget(d);
  const int n = cards_->count();
  cards_->addWidget(card, n / 3, n % 3);
}

QString SummaryView::card_text(const QString& title, const QString& part) const {
  for (int i = 0; i < cards_->count(); ++i) {
    QWidget* card = cards_->itemAt(i)->widget();
    if (card && card->property("title").toString() == title) {
      if (auto* label = card->findChild<QLabel*>(part)) return label->text();
    }
  }
  return {};
}

QString SummaryView::card_value(const QString& title) const {
  return card_text(title, QStringLiteral("value"));
}

QString SummaryView::card_detail(const QString& title) const {
  return card_text(title, QStringLiteral("detail"));
}

void SummaryView::show_run(std::shared_ptr<const RunData> result) {
  clear();
  const json& s = result->summary;
  heading_->setText(QString::fromStdString(s.value("scenario", "")) + QStringLiteral("  ·  ") +
                    QStringLiteral("%1 ranks, %2 nodes, %3 region(s)")
                        .arg(s["cluster"]["ranks"].get<int>())
                        .arg(s["cluster"]["nodes"].get<int>())
                        .arg(s["cluster"]["regions"].get<int>()));
  std::set<int> oom;
  for (const json& o : s["memory_overflows"]) oom.insert(o["rank"].get<int>());
  QStringList notes;
  if (result->training()) {
    const json& t = s["training"];
    const json& plan = t["plan"];
    add_card(QStringLiteral("Step time"), seconds_text(result->step_seconds()),
             QStringLiteral("one iteration: %1 micro-batches, DP %2 × TP %3 × PP %4")
                 .arg(t["micro_batches"].get<int64_t>())
                 .arg(plan["dp"].get<int>())
                 .arg(plan["tp"].get<int>())
                 .arg(plan["pp"].get<int>()));
    add_card(QStringLiteral("Throughput"),
             rate_text(number(t, "tokens_per_s"), QStringLiteral("tokens")),
             rate_text(number(t, "samples_per_s"), QStringLiteral("samples")) +
                 QStringLiteral(", ") + count_text(number(t, "tokens_per_iteration")) +
                 QStringLiteral(" tokens per step"));
    add_card(QStringLiteral("MFU"), percent_text(number(t, "mfu")),
             QString::number(number(t, "achieved_tflops_per_device"), 'f', 1) +
                 QStringLiteral(" TFLOPS achieved per device"));
    if (t.contains("time_to_train_s") && t["time_to_train_s"].is_number()) {
      // A batch-size schedule's phases run before the configured batch: say how many.
      const json& run = t.contains("run") ? t["run"] : json::object();
      const size_t phases = run.contains("batch_phases") ? run["batch_phases"].size() : 0;
      add_card(QStringLiteral("Time to train"), seconds_text(number(t, "time_to_train_s")),
               count_text(number(t, "iterations_to_train")) + QStringLiteral(" iterations") +
                   (phases > 0 ? QStringLiteral(", the first in %1 smaller-batch phases")
                                     .arg(static_cast<qulonglong>(phases))
                               : QString()));
    } else {
      add_card(QStringLiteral("Time to train"), QStringLiteral("—"),
               QStringLiteral("set training.total_tokens, dataset_samples or iterations to see "
                              "it"));
    }
    const HeadlineFigures figures = headline_figures(s);
    const double peak = figures.peak_bytes, capacity = figures.capacity_bytes;
    add_card(QStringLiteral("Peak memory"), bytes_text(peak),
             capacity > 0 ? QStringLiteral("of %1 on that device (%2)")
                                .arg(bytes_text(capacity))
                                .arg(percent_text(peak / capacity))
                          : QString(),
             peak > capacity && capacity > 0, capacity > 0 ? peak / capacity : -1);
    add_card(QStringLiteral("Busiest rank"),
             seconds_text(number(t, "max_compute_s")) + QStringLiteral(" compute"),
             QStringLiteral("exposed communication %1, pipeline bubble %2")
                 .arg(seconds_text(number(t, "max_exposed_comm_s")),
                      seconds_text(number(t, "max_bubble_s"))));
    for (const json& n : t["notes"]) notes << QString::fromStdString(n.get<std::string>());
  } else {
    add_card(QStringLiteral("Step time"), seconds_text(result->step_seconds()),
             QStringLiteral("simulated time of the workload"));
    add_card(QStringLiteral("Events"), count_text(s.at("events").get<double>()),
             count_text(s.at("tasks").get<double>()) + QStringLiteral(" tasks"));
    // A sweep or a task graph lists every call (a training step sums them by operation).
    const json& calls = s.at("collectives");
    double busbw = 0;
    for (const json& c : calls) busbw = std::max(busbw, c.value("busbw_GBps", 0.0));
    add_card(QStringLiteral("Collective calls"), count_text(static_cast<double>(calls.size())),
             calls.empty() ? QString()
                           : QStringLiteral("highest bus bandwidth %1 GB/s").arg(busbw, 0, 'f', 1));
  }
  add_card(QStringLiteral("Out of memory"),
           oom.empty() ? QStringLiteral("none") : QStringLiteral("%1 ranks").arg(oom.size()),
           oom.empty() ? QStringLiteral("every rank fits its device")
                       : QStringLiteral("ranks ") + rank_ranges(oom),
           !oom.empty());
  const json& costs = s["cost_sources"];
  QStringList sources;
  for (const char* k : {"measured", "interpolated", "extrapolated", "roofline"}) {
    if (costs.contains(k) && costs[k]["ops"].get<double>() > 0) {
      sources << QStringLiteral("%1 %2").arg(percent_text(costs[k]["share"].get<double>()), k);
    }
  }
  notes << QStringLiteral("Cost model: %1%2")
               .arg(
                   QString::fromStdString(s.value("cost_model", "")),
                   sources.isEmpty() ? QString() : " (" + sources.join(", ") + " of compute time)");
  notes_->setText(notes.join("\n"));
}

}  // namespace dtsim::gui
