// The timeline: a Gantt chart of every recorded task, one row per rank and stream, with
// zoom (wheel, around the cursor), pan (drag), hover details and Home to see the whole
// step. Drawing is bounded by pixels, not tasks: spans narrower than a pixel are drawn as
// one column per pixel and skipped by binary search, so a 1,024-GPU step repaints as fast
// as a small one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <QAbstractScrollArea>

#include "gui/scenario_run.h"

namespace dtsim::gui {

class TimelineView : public QAbstractScrollArea {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);
  void show_run(std::shared_ptr<const RunData> result);
  void clear();

  // The window of time shown, in nanoseconds of the step.
  void set_window(double start_ns, double end_ns);
  double window_start() const { return t0_; }
  double window_end() const;
  void show_all();
  // The time the axis spans (the step by default): comparing two runs on one time axis.
  void set_time_span(double total_ns);
  double time_span() const { return total_ns_; }
  int row_count() const { return static_cast<int>(rows_.size()); }
  // The task drawn at a point of the viewport, if any.
  std::optional<TaskId> task_at(QPoint pos) const;
  // A sentence about the rows (ranks recorded, streams), shown above the chart.
  QString rows_note() const;

 signals:
  void window_changed(double start_ns, double end_ns);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  struct Row {
    int rank = 0;
    uint16_t stream = 0;
    std::vector<uint32_t> spans;  // indexes into the rank's recorded spans, by start
  };

  double ns_per_px() const;
  double x_of(double t_ns) const;
  double time_at(double x) const;
  int chart_width() const;
  int first_row() const;
  void update_scrollbars();
  void paint_axis(QPainter& p, int width);
  void paint_row(QPainter& p, const Row& row, int y);
  QString describe(TaskId task) const;

  std::shared_ptr<const RunData> data_;
  std::vector<Row> rows_;
  double total_ns_ = 1;
  double t0_ = 0;  // window start
  double window_ns_ = 1;
  std::optional<QPoint> drag_from_;
  double drag_t0_ = 0;
  int drag_row_ = 0;
};

}  // namespace dtsim::gui
