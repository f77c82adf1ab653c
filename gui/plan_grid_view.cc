// The plan grid's controls and heat map.
#include "gui/plan_grid_view.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>

#include "gui/charts.h"
#include "gui/figures.h"
#include "gui/scenario_run.h"
#include "runner/plan_variants.h"

namespace dtsim::gui {

// The heat map: columns TP, rows PP.
class PlanHeatMap : public QWidget {
 public:
  explicit PlanHeatMap(PlanGridView* owner) : QWidget(owner), owner_(owner) {
    setMouseTracking(true);
  }

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* e) override;

 private:
  struct Layout {
    std::vector<int> tps, pps;
    QRectF grid;
    double cell_w = 0, cell_h = 0;
  };
  Layout layout() const;
  int plan_at(QPointF pos) const;
  PlanGridView* owner_;
};

namespace {

constexpr int kMargin = 70;

// Green (fast) to red (slow) on a log scale between the grid's fastest and slowest steps.
QColor heat(double step, double fastest, double slowest) {
  const double t = slowest > fastest ? std::log(step / fastest) / std::log(slowest / fastest) : 0;
  return three_stop_color(QColor(0x1a, 0x98, 0x50), QColor(0xfe, 0xe0, 0x8b),
                          QColor(0xd7, 0x30, 0x27), t);
}

}  // namespace

PlanHeatMap::Layout PlanHeatMap::layout() const {
  Layout l;
  std::set<int> tps, pps;
  for (const auto& p : owner_->plans_) {
    tps.insert(p.tp);
    pps.insert(p.pp);
  }
  l.tps.assign(tps.begin(), tps.end());
  l.pps.assign(pps.begin(), pps.end());
  l.grid =
      QRectF(kMargin, 30, std::max(1, width() - kMargin - 20), std::max(1, height() - 30 - 70));
  if (!l.tps.empty()) l.cell_w = l.grid.width() / static_cast<double>(l.tps.size());
  if (!l.pps.empty()) l.cell_h = l.grid.height() / static_cast<double>(l.pps.size());
  return l;
}

int PlanHeatMap::plan_at(QPointF pos) const {
  const Layout l = layout();
  if (!l.grid.contains(pos) || l.cell_w <= 0 || l.cell_h <= 0) return -1;
  const size_t col = static_cast<size_t>((pos.x() - l.grid.left()) / l.cell_w);
  const size_t row = static_cast<size_t>((pos.y() - l.grid.top()) / l.cell_h);
  if (col >= l.tps.size() || row >= l.pps.size()) return -1;
  for (size_t i = 0; i < owner_->plans_.size(); ++i) {
    if (owner_->plans_[i].tp == l.tps[col] && owner_->plans_[i].pp == l.pps[row])
      return static_cast<int>(i);
  }
  return -1;
}

void PlanHeatMap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const Layout l = layout();
  if (l.tps.empty()) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter,
               QStringLiteral("Run the grid to see every (TP, PP) plan of this cluster."));
    return;
  }
  const auto& figures = owner_->figures_;
  double fastest = 0, slowest = 0;
  for (const PointFigures& f : figures) {
    if (!f.completed) continue;
    fastest = fastest == 0 ? f.step_s : std::min(fastest, f.step_s);
    slowest = std::max(slowest, f.step_s);
  }
  const int best = owner_->best();
  p.setPen(Qt::black);
  p.drawText(QRectF(l.grid.left(), 4, l.grid.width(), 22), Qt::AlignCenter,
             QStringLiteral("tensor-parallel ranks (TP)"));
  p.save();
  p.translate(14, l.grid.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-100, -10, 200, 20), Qt::AlignCenter, QStringLiteral("pipeline stages (PP)"));
  p.restore();
  for (size_t c = 0; c < l.tps.size(); ++c) {
    p.drawText(QRectF(l.grid.left() + static_cast<double>(c) * l.cell_w, l.grid.bottom() + 4,
                      l.cell_w, 18),
               Qt::AlignCenter, QString::number(l.tps[c]));
  }
  for (size_t r = 0; r < l.pps.size(); ++r) {
    p.drawText(QRectF(26, l.grid.top() + static_cast<double>(r) * l.cell_h, kMargin - 32, l.cell_h),
               Qt::AlignVCenter | Qt::AlignRight, QString::number(l.pps[r]));
  }
  for (size_t i = 0; i < owner_->plans_.size(); ++i) {
    const auto& plan = owner_->plans_[i];
    const size_t c =
        static_cast<size_t>(std::find(l.tps.begin(), l.tps.end(), plan.tp) - l.tps.begin());
    const size_t r =
        static_cast<size_t>(std::find(l.pps.begin(), l.pps.end(), plan.pp) - l.pps.begin());
    const QRectF cell(l.grid.left() + static_cast<double>(c) * l.cell_w + 1,
                      l.grid.top() + static_cast<double>(r) * l.cell_h + 1, l.cell_w - 2,
                      l.cell_h - 2);
    const PointFigures& f = figures[i];
    QString text;
    if (f.completed && f.oom_ranks > 0) {
      p.fillRect(cell, QColor(0xee, 0xee, 0xee));
      p.fillRect(cell, QBrush(QColor(0xd7, 0x30, 0x27), Qt::BDiagPattern));
      text = QStringLiteral("OOM\n%1").arg(seconds_text(f.step_s));
    } else if (f.completed) {
      p.fillRect(cell, heat(f.step_s, fastest, slowest));
      text = QStringLiteral("%1\n%2").arg(seconds_text(f.step_s), bytes_text(f.peak_bytes));
    } else if (!f.error.isEmpty()) {
      p.fillRect(cell, QColor(0xf4, 0xf4, 0xf4));
      text = QStringLiteral("not valid");
    } else {
      p.fillRect(cell, QColor(0xfa, 0xfa, 0xfa));
      text = owner_->running() ? QStringLiteral("…") : QString();
    }
    p.setPen(Qt::black);
    p.drawText(cell, Qt::AlignCenter, QStringLiteral("DP %1\n").arg(plan.dp) + text);
    if (static_cast<int>(i) == best) {
      QPen pen(Qt::black, 4);
      p.setPen(pen);
      p.drawRect(cell.adjusted(2, 2, -2, -2));
    }
  }
  p.setPen(Qt::black);
  p.drawText(
      QRectF(l.grid.left(), l.grid.bottom() + 24, l.grid.width(), 44),
      Qt::AlignCenter | Qt::TextWordWrap,
      QStringLiteral(
          "Step time (green fast, red slow) and peak memory per plan · hatched: out of memory · "
          "outlined: the fastest that fits · click a cell to open that plan"));
}

bool PlanHeatMap::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int i = plan_at(help->pos());
    if (i >= 0) {
      const auto& plan = owner_->plans_[static_cast<size_t>(i)];
      const PointFigures& f = owner_->figures_[static_cast<size_t>(i)];
      QString text = QStringLiteral("TP %1 × PP %2 × DP %3").arg(plan.tp).arg(plan.pp).arg(plan.dp);
      if (f.completed) {
        text +=
            QStringLiteral("\nstep %1, %2, MFU %3\npeak memory %4%5")
                .arg(seconds_text(f.step_s), rate_text(f.tokens_per_s, QStringLiteral("tokens")),
                     percent_text(f.mfu), bytes_text(f.peak_bytes),
                     f.oom_ranks > 0
                         ? QStringLiteral(" (out of memory on %1 ranks)").arg(f.oom_ranks)
                         : QString());
      } else if (!f.error.isEmpty()) {
        text += "\n" + f.error;
      }
      QToolTip::showText(help->globalPos(), text, this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(e);
}

void PlanHeatMap::mousePressEvent(QMouseEvent* event) {
  const int i = plan_at(event->position());
  if (i >= 0) owner_->choose(i);
}

PlanGridView::PlanGridView(QWidget* parent) : QWidget(parent), runner_(new SweepRunner(this)) {
  auto* layout = new QVBoxLayout(this);
  auto* controls = new QHBoxLayout;
  controls->addWidget(
      new QLabel(QStringLiteral("Every (TP, PP) plan of this cluster with micro-batch"), this));
  micro_batch_ = new QSpinBox(this);
  micro_batch_->setRange(1, 1 << 20);
  controls->addWidget(micro_batch_);
  run_ = new QPushButton(QStringLiteral("Run grid"), this);
  cancel_ = new QPushButton(QStringLiteral("Cancel"), this);
  cancel_->setEnabled(false);
  controls->addStretch();
  controls->addWidget(run_);
  controls->addWidget(cancel_);
  layout->addLayout(controls);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  layout->addWidget(status_);
  map_ = new PlanHeatMap(this);
  layout->addWidget(map_, 1);
  connect(run_, &QPushButton::clicked, this, [this] { start(); });
  connect(cancel_, &QPushButton::clicked, this, [this] { cancel(); });
  connect(runner_, &SweepRunner::point_done, this, [this](int i) {
    figures_[static_cast<size_t>(i)] = runner_->results()[static_cast<size_t>(i)];
    int done = 0;
    for (const PointFigures& f : figures_) done += f.completed || !f.error.isEmpty();
    status_->setText(QStringLiteral("%1 of %2 plans done").arg(done).arg(plans_.size()));
    map_->update();
  });
  connect(runner_, &SweepRunner::finished, this, [this](bool cancelled) {
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    int oom = 0, invalid = 0;
    for (const PointFigures& f : figures_) {
      oom += f.completed && f.oom_ranks > 0;
      invalid += !f.completed && !f.error.isEmpty();
    }
    const int b = best();
    status_->setText(
        cancelled
            ? QStringLiteral("Grid cancelled.")
            : QStringLiteral("%1 plans: %2 out of memory, %3 not valid. %4")
                  .arg(plans_.size())
                  .arg(oom)
                  .arg(invalid)
                  .arg(b < 0 ? QStringLiteral("No plan fits.")
                             : QStringLiteral("Fastest that fits: TP %1 × PP %2 × DP %3, %4.")
                                   .arg(plans_[static_cast<size_t>(b)].tp)
                                   .arg(plans_[static_cast<size_t>(b)].pp)
                                   .arg(plans_[static_cast<size_t>(b)].dp)
                                   .arg(seconds_text(figures_[static_cast<size_t>(b)].step_s))));
    map_->update();
    emit grid_finished(cancelled);
  });
}

void PlanGridView::set_base(const nlohmann::ordered_json& document, const std::string& source) {
  base_ = document;
  source_ = source;
  // Follows the document's micro-batch (1, the loader's default, when it gives none) when
  // that changes; a value chosen in the spin box stays until then.
  const nlohmann::ordered_json::json_pointer key("/training/micro_batch");
  const int own =
      document.contains(key) && document[key].is_number_integer()
          ? static_cast<int>(std::clamp<int64_t>(document[key].get<int64_t>(), 1, 1 << 20))
          : 1;
  if (own != document_micro_batch_ && !running()) micro_batch_->setValue(own);
  document_micro_batch_ = own;
}

bool PlanGridView::start() {
  if (running()) return false;
  try {
    const Scenario scenario = load_document(base_, source_);
    plans_ = plan_points(scenario);
    figures_.assign(plans_.size(), PointFigures{});
    if (plans_.empty()) {
      status_->setText(QStringLiteral(
          "The plan grid needs a training scenario (model, training, parallelism)."));
      return false;
    }
  } catch (const InputError& e) {
    plans_.clear();
    figures_.clear();
    map_->update();
    status_->setText(QStringLiteral("Fix the scenario's %1 problem(s) first (marked in the form).")
                         .arg(e.problems().size()));
    return false;
  }
  micro_batch_ran_ = micro_batch_->value();
  std::vector<SweepPoint> points;
  for (const auto& plan : plans_) {
    points.push_back({QStringLiteral("TP %1 × PP %2").arg(plan.tp).arg(plan.pp),
                      plan_variant(base_, plan, micro_batch_ran_)});
  }
  run_->setEnabled(false);
  cancel_->setEnabled(true);
  status_->setText(QStringLiteral("0 of %1 plans done").arg(plans_.size()));
  runner_->start(std::move(points), source_);
  map_->update();
  return true;
}

void PlanGridView::cancel() { runner_->cancel(); }

int PlanGridView::best() const { return fastest_that_fits(figures_); }

QString PlanGridView::error_text() const { return status_->text(); }

void PlanGridView::choose(int index) {
  if (index < 0 || index >= static_cast<int>(plans_.size())) return;
  const auto& plan = plans_[static_cast<size_t>(index)];
  emit plan_chosen(plan.tp, plan.pp, micro_batch_ran_);
}

}  // namespace dtsim::gui
