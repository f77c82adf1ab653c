// The what-if sweep and its charts.
#include "gui/whatif_view.h"

#include <algorithm>
#include <cmath>

#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPushButton>
#include <QScatterSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include "gui/charts.h"
#include "gui/figures.h"
#include "runner/sweep_points.h"
#include "scenarios/loader.h"

namespace dtsim::gui {
namespace {

constexpr size_t kMaxSweeps = 3;
constexpr double kGiB = 1024.0 * 1024 * 1024;
const QColor kSweepColors[kMaxSweeps] = {QColor(0x1f, 0x77, 0xb4), QColor(0x2c, 0xa0, 0x2c),
                                         QColor(0x94, 0x67, 0xbd)};

// Integer ranges: "lo..hi" (step 1) or "lo..hi*f" (times f).
bool expand_range(const QString& text, QStringList& out) {
  const int dots = text.indexOf(QStringLiteral(".."));
  if (dots <= 0) return false;
  bool ok_lo = false, ok_hi = false, ok_f = true;
  const long long lo = text.left(dots).trimmed().toLongLong(&ok_lo);
  QString rest = text.mid(dots + 2);
  long long factor = 0;
  const int star = rest.indexOf('*');
  if (star >= 0) {
    factor = rest.mid(star + 1).trimmed().toLongLong(&ok_f);
    rest = rest.left(star);
  }
  const long long hi = rest.trimmed().toLongLong(&ok_hi);
  if (!ok_lo || !ok_hi || !ok_f || hi < lo || (star >= 0 && factor < 2) || (star >= 0 && lo < 1))
    return false;
  for (long long v = lo; out.size() <= 64;) {
    out << QString::number(v);
    if (factor ? v > hi / factor : v >= hi) break;  // the next value would pass hi (or overflow)
    v = factor ? v * factor : v + 1;
  }
  return true;
}

}  // namespace

QStringList expand_values(const QString& text, QString& error) {
  QStringList out;
  for (const std::string& part : split_top_level(text.toStdString())) {
    const QString value = QString::fromStdString(part).trimmed();
    if (value.isEmpty()) {
      error = QStringLiteral("an empty value in \"%1\"").arg(text);
      return {};
    }
    if (value.contains(QStringLiteral("..")) && !value.startsWith('"')) {
      if (!expand_range(value, out)) {
        error = QStringLiteral("\"%1\": a range is lo..hi or lo..hi*factor (integers, lo <= hi)")
                    .arg(value);
        return {};
      }
    } else {
      out << value;
    }
  }
  if (out.size() > 64) {
    error = QStringLiteral("more than 64 values");
    return {};
  }
  return out;
}

WhatIfView::WhatIfView(QWidget* parent) : QWidget(parent), runner_(new SweepRunner(this)) {
  auto* layout = new QVBoxLayout(this);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(QStringLiteral("Vary"), this));
  key_ = new QComboBox(this);
  key_->setEditable(true);
  key_->setMinimumWidth(230);
  key_->setToolTip(QStringLiteral("Any scenario key, written with dots (cluster.nodes.0.count)"));
  controls->addWidget(key_);
  controls->addWidget(new QLabel(QStringLiteral("over"), this));
  values_ = new QLineEdit(this);
  values_->setPlaceholderText(QStringLiteral("1,2,4,8  or  1..8  or  1..64*2"));
  controls->addWidget(values_, 1);
  overlay_ = new QCheckBox(QStringLiteral("overlay"), this);
  overlay_->setToolTip(QStringLiteral("Keep the previous sweeps on the charts (up to three)"));
  controls->addWidget(overlay_);
  run_ = new QPushButton(QStringLiteral("Sweep"), this);
  cancel_ = new QPushButton(QStringLiteral("Cancel"), this);
  cancel_->setEnabled(false);
  controls->addWidget(run_);
  controls->addWidget(cancel_);
  layout->addLayout(controls);
  status_ = new QLabel(this);
  error_ = new QLabel(this);
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("color: #b00020;"));
  layout->addWidget(status_);
  layout->addWidget(error_);
  step_chart_ = new QChartView(this);
  throughput_chart_ = new QChartView(this);
  memory_chart_ = new QChartView(this);
  for (QChartView* v : {step_chart_, throughput_chart_, memory_chart_}) {
    v->setRenderHint(QPainter::Antialiasing);
    layout->addWidget(v, 1);
  }
  connect(run_, &QPushButton::clicked, this,
          [this] { start(key_->currentText(), values_->text()); });
  connect(cancel_, &QPushButton::clicked, this, [this] { cancel(); });
  connect(runner_, &SweepRunner::point_done, this, [this](int i) {
    sweeps_.back().results[static_cast<size_t>(i)] = runner_->results()[static_cast<size_t>(i)];
    int done = 0;
    for (const PointFigures& f : sweeps_.back().results) done += f.completed || !f.error.isEmpty();
    status_->setText(
        QStringLiteral("%1 of %2 points done").arg(done).arg(sweeps_.back().values.size()));
    redraw();
  });
  connect(runner_, &SweepRunner::finished, this, [this](bool cancelled) {
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    QStringList failed;
    const Sweep& s = sweeps_.back();
    for (size_t i = 0; i < s.results.size(); ++i) {
      if (!s.results[i].error.isEmpty())
        failed << s.values[static_cast<qsizetype>(i)] + ": " + s.results[i].error;
    }
    status_->setText(
        cancelled ? QStringLiteral("Sweep cancelled.")
                  : QStringLiteral("Swept %1 over %2 values.").arg(s.key).arg(s.values.size()));
    error_->setText(failed.join('\n'));
    redraw();
    emit sweep_finished(cancelled);
  });
  redraw();
}

void WhatIfView::set_base(const nlohmann::ordered_json& document, const std::string& source) {
  base_ = document;
  source_ = source;
  suggest_keys();
}

void WhatIfView::suggest_keys() {
  const QString current = key_->currentText();
  QStringList keys;
  auto has = [&](const char* pointer) {
    return base_.contains(nlohmann::ordered_json::json_pointer(pointer));
  };
  if (has("/cluster/wan")) keys << QStringLiteral("cluster.wan.0.bandwidth");
  if (has("/parallelism") || has("/model")) {
    keys << QStringLiteral("parallelism.tp") << QStringLiteral("parallelism.pp")
         << QStringLiteral("training.micro_batch") << QStringLiteral("training.global_batch")
         << QStringLiteral("training.recompute") << QStringLiteral("parallelism.zero_stage");
  }
  if (has("/cluster/nodes")) {
    keys << QStringLiteral("cluster.nodes.0.count") << QStringLiteral("cluster.nodes.0.device")
         << QStringLiteral("cluster.nodes.0.nic_bandwidth");
  }
  if (has("/cluster/regions")) keys << QStringLiteral("cluster.regions.0.nodes.0.count");
  key_->clear();
  key_->addItems(keys);
  key_->setCurrentText(current.isEmpty() && !keys.isEmpty() ? keys.front() : current);
}

bool WhatIfView::start(const QString& key, const QString& values) {
  error_->clear();
  if (runner_->running()) return false;
  QString error;
  const QStringList list = expand_values(values, error);
  if (key.trimmed().isEmpty()) error = QStringLiteral("choose a key to vary");
  if (error.isEmpty() && list.isEmpty()) error = QStringLiteral("give the values to sweep");
  std::vector<SweepPoint> points;
  for (const QString& v : list) {
    if (!error.isEmpty()) break;
    // The loader's own override (`dtsim run --set`): a variant is never saved, so its
    // keys' order does not matter.
    nlohmann::json plain = nlohmann::json::parse(base_.dump());
    const std::string problem =
        apply_override(plain, key.trimmed().toStdString() + "=" + v.toStdString());
    if (!problem.empty())
      error = QStringLiteral("%1=%2: %3").arg(key.trimmed(), v, QString::fromStdString(problem));
    points.push_back({v, nlohmann::ordered_json::parse(plain.dump())});
  }
  if (!error.isEmpty()) {
    error_->setText(error);
    return false;
  }
  if (!overlay_->isChecked()) sweeps_.clear();
  if (sweeps_.size() == kMaxSweeps) sweeps_.pop_front();
  sweeps_.push_back({key.trimmed(), list, std::vector<PointFigures>(points.size())});
  key_->setCurrentText(key.trimmed());
  values_->setText(values);
  run_->setEnabled(false);
  cancel_->setEnabled(true);
  status_->setText(QStringLiteral("0 of %1 points done").arg(list.size()));
  runner_->start(std::move(points), source_);
  redraw();
  return true;
}

void WhatIfView::cancel() { runner_->cancel(); }

QString WhatIfView::error_text() const { return error_->text(); }

int WhatIfView::points_in_chart(int sweep) const {
  int n = 0;
  for (const PointFigures& f : sweeps_.at(static_cast<size_t>(sweep)).results) n += f.completed;
  return n;
}

int WhatIfView::oom_points_in_chart(int sweep) const {
  int n = 0;
  for (const PointFigures& f : sweeps_.at(static_cast<size_t>(sweep)).results)
    n += f.completed && f.oom_ranks > 0;
  return n;
}

void WhatIfView::redraw() {
  struct Metric {
    QChartView* view;
    QString title;
    QString axis;
    double (*value)(const PointFigures&);
    const char* format;
  };
  const Metric metrics[] = {
      {step_chart_, QStringLiteral("Step time"), QStringLiteral("seconds"),
       [](const PointFigures& f) { return f.step_s; }, "%.3g"},
      {throughput_chart_, QStringLiteral("Throughput"), QStringLiteral("tokens/s"),
       [](const PointFigures& f) { return f.tokens_per_s; }, "%.0f"},
      {memory_chart_, QStringLiteral("Peak memory (out-of-memory points in red)"),
       QStringLiteral("GiB"), [](const PointFigures& f) { return f.peak_bytes / kGiB; }, "%.0f"},
  };
  const QStringList labels = sweeps_.empty() ? QStringList() : sweeps_.back().values;
  for (const Metric& m : metrics) {
    auto* chart = new QChart;
    chart->setTitle(m.title);
    auto* x = new QCategoryAxis;
    x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    for (qsizetype i = 0; i < labels.size(); ++i) x->append(labels[i], static_cast<double>(i));
    x->setRange(-0.3, std::max<double>(0.3, static_cast<double>(labels.size()) - 0.7));
    if (!sweeps_.empty()) x->setTitleText(sweeps_.back().key);
    auto* y = new QValueAxis;
    y->setTitleText(m.axis);
    y->setLabelFormat(QString::fromUtf8(m.format));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    double top = 0, capacity = 0;
    for (size_t s = 0; s < sweeps_.size(); ++s) {
      const Sweep& sweep = sweeps_[s];
      auto* line = new QLineSeries;
      line->setName(sweeps_.size() > 1 ? QStringLiteral("%1: %2").arg(s + 1).arg(sweep.key)
                                       : sweep.key);
      line->setColor(kSweepColors[s]);
      auto* oom = new QScatterSeries;
      oom->setName(QStringLiteral("out of memory"));
      oom->setColor(QColor(0xd6, 0x27, 0x28));
      oom->setMarkerSize(11);
      for (size_t i = 0; i < sweep.results.size(); ++i) {
        const PointFigures& f = sweep.results[i];
        if (!f.completed) continue;
        const double v = m.value(f);
        top = std::max(top, v);
        capacity = std::max(capacity, f.capacity_bytes / kGiB);
        line->append(static_cast<double>(i), v);
        if (f.oom_ranks > 0) oom->append(static_cast<double>(i), v);
      }
      chart->addSeries(line);
      line->attachAxis(x);
      line->attachAxis(y);
      if (oom->count() > 0) {
        chart->addSeries(oom);
        oom->attachAxis(x);
        oom->attachAxis(y);
      } else {
        delete oom;
      }
    }
    if (m.view == memory_chart_ && capacity > 0) {
      add_capacity_line(chart, x, y, -0.3,
                        std::max<double>(0.3, static_cast<double>(labels.size()) - 0.7), capacity,
                        QStringLiteral("capacity %1").arg(bytes_text(capacity * kGiB)));
      top = std::max(top, capacity);
    }
    y->setRange(0, top > 0 ? top * 1.08 : 1);
    y->applyNiceNumbers();
    chart->legend()->setAlignment(Qt::AlignRight);
    replace_chart(m.view, chart);
  }
}

}  // namespace dtsim::gui
