// The per-rank time breakdown chart.
#include "gui/breakdown_view.h"

#include <array>
#include <map>

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <QVBoxLayout>

#include "gui/charts.h"
#include "gui/figures.h"

namespace dtsim::gui {
namespace {

constexpr int kMaxRankBars = 48;
constexpr std::array<const char*, 5> kParts = {"compute", "exposed communication",
                                               "pipeline bubble", "waiting", "idle"};
const std::array<QColor, 5> kColors = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                       QColor(0xbc, 0xbd, 0x22), QColor(0xd6, 0x27, 0x28),
                                       QColor(0xc7, 0xc7, 0xc7)};

struct Bar {
  QString label;
  std::array<double, 5> seconds{};
};

}  // namespace

BreakdownView::BreakdownView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  caption_ = new QLabel(this);
  caption_->setWordWrap(true);
  layout->addWidget(caption_);
  chart_ = new QChartView(this);
  chart_->setRenderHint(QPainter::Antialiasing);
  layout->addWidget(chart_);
  clear();
}

void BreakdownView::clear() {
  bars_ = 0;
  replace_chart(chart_, new QChart);
  caption_->setText(QStringLiteral("Run the scenario to see where each rank's time goes."));
}

void BreakdownView::show_run(std::shared_ptr<const RunData> result) {
  std::vector<Bar> bars;
  QString note;
  if (result->training()) {
    const auto& ranks = result->summary["training"]["ranks"];
    auto parts = [](const nlohmann::ordered_json& r) {
      return std::array<double, 5>{r["compute_s"].get<double>(), r["exposed_comm_s"].get<double>(),
                                   r["bubble_s"].get<double>(), r["waiting_s"].get<double>(),
                                   r["idle_s"].get<double>()};
    };
    if (ranks.size() <= kMaxRankBars) {
      for (const auto& r : ranks)
        bars.push_back({QStringLiteral("%1").arg(r["rank"].get<int>()), parts(r)});
    } else {
      std::map<int, std::pair<int, std::array<double, 5>>> stages;
      for (const auto& r : ranks) {
        auto& [n, sum] = stages[r["pp"].get<int>()];
        const auto p = parts(r);
        for (size_t i = 0; i < p.size(); ++i) sum[i] += p[i];
        ++n;
      }
      for (auto& [stage, entry] : stages) {
        auto& [n, sum] = entry;
        for (double& s : sum) s /= n;
        bars.push_back({QStringLiteral("stage %1").arg(stage), sum});
      }
      note = QStringLiteral(" One bar per pipeline stage: the mean of its %1 ranks.")
                 .arg(ranks.size() / stages.size());
    }
  } else {
    const auto& ranks = result->run.result.ranks;
    const size_t n = std::min<size_t>(ranks.size(), kMaxRankBars);
    for (size_t r = 0; r < n; ++r) {
      const RankStats& s = ranks[r];
      bars.push_back({QString::number(r),
                      {s.compute.seconds(), s.exposed_communication.seconds(), 0,
                       s.waiting.seconds(), s.idle.seconds()}});
    }
    if (n < ranks.size())
      note = QStringLiteral(" The first %1 of %2 ranks.").arg(n).arg(ranks.size());
  }
  auto* chart = new QChart;
  auto* series = new QStackedBarSeries;
  for (size_t p = 0; p < kParts.size(); ++p) {
    bool any = false;
    for (const Bar& b : bars) any |= b.seconds[p] > 0;
    if (!any) continue;
    auto* set = new QBarSet(QString::fromUtf8(kParts[p]));
    set->setColor(kColors[p]);
    set->setBorderColor(kColors[p]);
    for (const Bar& b : bars) *set << b.seconds[p];
    series->append(set);
  }
  series->setBarWidth(0.8);
  chart->addSeries(series);
  auto* x = new QBarCategoryAxis;
  for (const Bar& b : bars) x->append(b.label);
  x->setTitleText(result->training() && note.contains("stage") ? QStringLiteral("pipeline stage")
                                                               : QStringLiteral("rank"));
  auto* y = new QValueAxis;
  y->setTitleText(QStringLiteral("seconds of the step"));
  y->setLabelFormat(QStringLiteral("%.3g"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  y->setMin(0);
  y->applyNiceNumbers();
  chart->setTitle(QStringLiteral("Where each rank's step goes (step %1)")
                      .arg(seconds_text(result->step_seconds())));
  chart->legend()->setAlignment(Qt::AlignBottom);
  replace_chart(chart_, chart);
  bars_ = static_cast<int>(bars.size());
  caption_->setText(
      QStringLiteral("Compute, communication not hidden behind compute, the pipeline's bubble, "
                     "waiting for peers at a collective or a receive, and idle time.") +
      note);
}

}  // namespace dtsim::gui
