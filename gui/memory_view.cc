// The memory charts.
#include "gui/memory_view.h"

#include <algorithm>
#include <map>

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPen>
#include <QSpinBox>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include "gui/charts.h"
#include "gui/figures.h"

namespace dtsim::gui {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr int kMaxBars = 24;

// "optimizer_states" as a legend writes it.
QString category_label(MemoryCategory c) {
  const std::string_view name = memory_category_name(c);
  QString label = QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
  return label.replace('_', ' ');
}

QColor category_color(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::kUnspecified:
      return QColor(0x9e, 0x9e, 0x9e);
    case MemoryCategory::kWeights:
      return QColor(0x1f, 0x77, 0xb4);
    case MemoryCategory::kGradients:
      return QColor(0xff, 0x7f, 0x0e);
    case MemoryCategory::kOptimizerStates:
      return QColor(0x2c, 0xa0, 0x2c);
    case MemoryCategory::kActivations:
      return QColor(0xd6, 0x27, 0x28);
    case MemoryCategory::kRecomputed:
      return QColor(0x94, 0x67, 0xbd);
    case MemoryCategory::kWorkspace:
      return QColor(0x8c, 0x56, 0x4b);
    case MemoryCategory::kCommBuffers:
      return QColor(0xe3, 0x77, 0xc2);
  }
  return Qt::gray;
}

QString group_label(const std::vector<int>& ranks) {
  if (ranks.size() == 1) return QStringLiteral("rank %1").arg(ranks.front());
  return QStringLiteral("rank %1 +%2").arg(ranks.front()).arg(ranks.size() - 1);
}

}  // namespace

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  caption_ = new QLabel(this);
  caption_->setWordWrap(true);
  layout->addWidget(caption_);
  breakdown_ = new QChartView(this);
  breakdown_->setRenderHint(QPainter::Antialiasing);
  layout->addWidget(breakdown_, 3);
  auto* pick = new QHBoxLayout;
  pick->addWidget(new QLabel(QStringLiteral("Memory over the step of rank"), this));
  rank_ = new QSpinBox(this);
  rank_->setRange(0, 0);
  pick->addWidget(rank_);
  pick->addStretch();
  layout->addLayout(pick);
  curve_ = new QChartView(this);
  curve_->setRenderHint(QPainter::Antialiasing);
  layout->addWidget(curve_, 2);
  connect(rank_, &QSpinBox::valueChanged, this, [this](int r) {
    if (r != selected_) select_rank(r);
  });
  clear();
}

void MemoryView::clear() {
  data_.reset();
  groups_.clear();
  curve_points_ = 0;
  replace_chart(breakdown_, new QChart);
  replace_chart(curve_, new QChart);
  caption_->setText(QStringLiteral("Run the scenario to see its memory."));
}

void MemoryView::show_run(std::shared_ptr<const RunData> result) {
  data_ = std::move(result);
  groups_.clear();
  const auto& memory = data_->recording->memory();
  std::map<std::pair<int64_t, std::array<int64_t, kMemoryCategories>>, size_t> index;
  for (int r = 0; r < static_cast<int>(memory.size()); ++r) {
    const RankMemory& m = memory[static_cast<size_t>(r)];
    const auto key = std::make_pair(m.peak, m.at_peak);
    auto [it, added] = index.emplace(key, groups_.size());
    if (added) groups_.emplace_back();
    groups_[it->second].push_back(r);
  }
  // The highest peaks first when there are more kinds of rank than bars.
  if (static_cast<int>(groups_.size()) > kMaxBars) {
    std::stable_sort(groups_.begin(), groups_.end(), [&](const auto& a, const auto& b) {
      return memory[static_cast<size_t>(a.front())].peak >
             memory[static_cast<size_t>(b.front())].peak;
    });
    groups_.resize(kMaxBars);
    std::sort(groups_.begin(), groups_.end());
  }
  rank_->setRange(0, std::max(0, static_cast<int>(memory.size()) - 1));
  draw_breakdown();
  select_rank(groups_.empty() ? 0 : groups_.front().front());
}

void MemoryView::draw_breakdown() {
  const auto& memory = data_->recording->memory();
  const auto& ranks = data_->run.result.ranks;
  auto* chart = new QChart;
  auto* series = new QStackedBarSeries;
  for (MemoryCategory c : kAllMemoryCategories) {
    const size_t ci = static_cast<size_t>(c);
    bool any = false;
    for (const auto& g : groups_) any |= memory[static_cast<size_t>(g.front())].at_peak[ci] != 0;
    if (!any) continue;
    auto* set = new QBarSet(category_label(c));
    set->setColor(category_color(c));
    set->setBorderColor(category_color(c));
    for (const auto& g : groups_) *set << memory[static_cast<size_t>(g.front())].at_peak[ci] / kGiB;
    series->append(set);
  }
  QStringList labels;
  double top = 0, capacity = 0;
  for (const auto& g : groups_) {
    labels << group_label(g);
    const int r = g.front();
    top = std::max(top, memory[static_cast<size_t>(r)].peak / kGiB);
    if (static_cast<size_t>(r) < ranks.size())
      capacity = std::max(capacity, ranks[static_cast<size_t>(r)].memory_capacity.count() / kGiB);
  }
  connect(series, &QStackedBarSeries::clicked, this, [this](int index, QBarSet*) {
    if (index >= 0 && index < static_cast<int>(groups_.size()))
      select_rank(groups_[static_cast<size_t>(index)].front());
  });
  chart->addSeries(series);
  auto* x = new QBarCategoryAxis;
  x->append(labels);
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("GiB at the rank's peak"));
  y->setRange(0, std::max(top, capacity) * 1.05 + 1e-9);
  y->applyNiceNumbers();
  y->setLabelFormat(QStringLiteral("%.0f"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  if (capacity > 0) {
    add_capacity_line(chart, x, y, -0.5, static_cast<double>(groups_.size()) - 0.5, capacity,
                      QStringLiteral("capacity %1").arg(bytes_text(capacity * kGiB)));
  }
  chart->setTitle(QStringLiteral("What each rank holds at its peak (click a bar for its curve)"));
  chart->legend()->setAlignment(Qt::AlignRight);
  replace_chart(breakdown_, chart);
  size_t alike = 0;
  for (const auto& g : groups_) alike += g.size();
  caption_->setText(
      QStringLiteral("%1 ranks in %2 bars: ranks that hold the same at their peak share a bar "
                     "(\"rank 8 +7\": rank 8 and 7 more).%3")
          .arg(alike)
          .arg(groups_.size())
          .arg(alike < memory.size()
                   ? QStringLiteral(" Shown: the %1 highest kinds of peak.").arg(groups_.size())
                   : QString()));
}

void MemoryView::select_rank(int rank) {
  if (!data_) return;
  selected_ = rank;
  rank_->setValue(rank);
  draw_curve();
}

void MemoryView::draw_curve() {
  const auto& memory = data_->recording->memory();
  if (selected_ < 0 || selected_ >= static_cast<int>(memory.size())) return;
  const RankMemory& m = memory[static_cast<size_t>(selected_)];
  auto* chart = new QChart;
  auto* line = new QLineSeries;
  line->setName(QStringLiteral("rank %1 in use").arg(selected_));
  double prev = 0;
  const double end = data_->run.result.end.seconds();
  line->append(0, 0);
  for (const MemoryPoint& p : m.curve) {  // a step: the level holds until the next change
    line->append(p.at.seconds(), prev);
    prev = p.in_use / kGiB;
    line->append(p.at.seconds(), prev);
  }
  line->append(end, prev);
  curve_points_ = static_cast<int>(line->count());
  chart->addSeries(line);
  auto* x = new QValueAxis;
  x->setTitleText(QStringLiteral("time in the step (s)"));
  x->setRange(0, std::max(end, 1e-9));
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("GiB in use"));
  const auto& ranks = data_->run.result.ranks;
  const double capacity = static_cast<size_t>(selected_) < ranks.size()
                              ? ranks[static_cast<size_t>(selected_)].memory_capacity.count() / kGiB
                              : 0;
  y->setRange(0, std::max(m.peak / kGiB, capacity) * 1.05 + 1e-9);
  y->applyNiceNumbers();
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  line->attachAxis(x);
  line->attachAxis(y);
  if (capacity > 0)
    add_capacity_line(chart, x, y, 0, std::max(end, 1e-9), capacity, QStringLiteral("capacity"));
  chart->setTitle(
      QStringLiteral("Rank %1: peak %2 at %3")
          .arg(selected_)
          .arg(bytes_text(static_cast<double>(m.peak)), seconds_text(m.peak_at.seconds())));
  chart->legend()->setAlignment(Qt::AlignRight);
  replace_chart(curve_, chart);
}

}  // namespace dtsim::gui
