// Memory: what each rank holds at its peak, stacked by category (weights, gradients,
// optimizer states, activations, recomputed activations, workspace, communication buffers)
// against the device's capacity, ranks that hold the same grouped into one bar; click a
// bar (or pick a rank) to see that rank's memory over the step.
#pragma once

#include <memory>
#include <vector>

#include <QWidget>

#include "gui/scenario_run.h"

class QChart;
class QChartView;
class QLabel;
class QSpinBox;

namespace dtsim::gui {

class MemoryView : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryView(QWidget* parent = nullptr);
  void show_run(std::shared_ptr<const RunData> result);
  void clear();
  void select_rank(int rank);

  // For tests: the bars (groups of ranks alike) and the curve's points.
  int bar_count() const { return static_cast<int>(groups_.size()); }
  int curve_points() const { return curve_points_; }
  int selected_rank() const { return selected_; }

 private:
  void draw_breakdown();
  void draw_curve();

  std::shared_ptr<const RunData> data_;
  std::vector<std::vector<int>> groups_;  // ranks alike, by first rank
  int selected_ = 0;
  int curve_points_ = 0;
  QChartView* breakdown_;
  QChartView* curve_;
  QSpinBox* rank_;
  QLabel* caption_;
};

}  // namespace dtsim::gui
