// Where each rank's step went: compute, exposed communication, pipeline bubble, waiting at
// rendezvous and idle, stacked per rank (per pipeline stage, as the mean of its ranks, on
// clusters too large for a bar per rank).
#pragma once

#include <memory>

#include <QWidget>

#include "gui/scenario_run.h"

class QChartView;
class QLabel;

namespace dtsim::gui {

class BreakdownView : public QWidget {
  Q_OBJECT

 public:
  explicit BreakdownView(QWidget* parent = nullptr);
  void show_run(std::shared_ptr<const RunData> result);
  void clear();
  int bar_count() const { return bars_; }

 private:
  QChartView* chart_;
  QLabel* caption_;
  int bars_ = 0;
};

}  // namespace dtsim::gui
