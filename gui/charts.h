// Small helpers for Qt Charts.
#pragma once

#include <QChart>
#include <QChartView>

namespace dtsim::gui {

// QChartView::setChart releases the chart it held without deleting it: this does.
inline void replace_chart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}

}  // namespace dtsim::gui
