// Small helpers for Qt Charts and the GUI's own charts.
#pragma once

#include <QAbstractAxis>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QPen>

namespace dtsim::gui {

// QChartView::setChart releases the chart it held without deleting it: this does.
inline void replace_chart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}

// The colour a fraction `t` (0..1) of the way along low -> mid -> high, each half blended
// linearly: the heat scales of the plan grid and the topology.
inline QColor three_stop_color(const QColor& low, const QColor& mid, const QColor& high, double t) {
  auto mix = [](const QColor& a, const QColor& b, double f) {
    return QColor::fromRgbF(a.redF() + (b.redF() - a.redF()) * f,
                            a.greenF() + (b.greenF() - a.greenF()) * f,
                            a.blueF() + (b.blueF() - a.blueF()) * f);
  };
  return t < 0.5 ? mix(low, mid, t * 2) : mix(mid, high, (t - 0.5) * 2);
}

// A device's memory capacity as a dashed horizontal line from x0 to x1.
inline void add_capacity_line(QChart* chart, QAbstractAxis* x, QAbstractAxis* y, double x0,
                              double x1, double capacity, const QString& name) {
  auto* line = new QLineSeries;
  line->setName(name);
  line->append(x0, capacity);
  line->append(x1, capacity);
  QPen pen(Qt::black);
  pen.setStyle(Qt::DashLine);
  pen.setWidthF(1.5);
  line->setPen(pen);
  chart->addSeries(line);
  line->attachAxis(x);
  line->attachAxis(y);
}

}  // namespace dtsim::gui
