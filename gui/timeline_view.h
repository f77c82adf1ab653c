// The timeline: a Gantt chart of every recorded task, one row per rank and stream, with
// zoom (wheel, around the cursor), pan (drag), hover details and Home to see the whole
// step. Beyond 32 ranks the rows are grouped per node (or per pipeline stage), each group
// shown by its first rank until its label is clicked (or expand_all); a group the run did
// not record (beyond the span budget) asks, when clicked, for a run that records it. Drawing
// is bounded by pixels, not tasks: spans narrower than a pixel are drawn as one column per
// pixel and skipped by binary search, so a 1,024-GPU step repaints as fast as a small one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <QAbstractScrollArea>

#include "gui/scenario_run.h"

namespace dtsim::gui {

// How the timeline groups its rows: beyond 32 ranks per node by default.
enum class RowGrouping { kAuto, kRanks, kNodes, kStages };

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
  // Groups of ranks (per node beyond 32 ranks, else one per rank, unless set_grouping
  // says otherwise: per pipeline stage for a training step) and their expansion.
  void set_grouping(RowGrouping grouping);
  int group_count() const { return static_cast<int>(groups_.size()); }
  void toggle_group(int group);
  // What a click on a group's name does: toggles it or, when the group is closed (or one
  // rank's) and some of its ranks are not recorded (a run beyond the span budget), asks for a run that
  // records them (once: a run that could not record them all leaves it to toggling).
  void click_group(int group);
  // Whether record_requested has a receiver (the main window's timeline; not the compare
  // view's).
  void set_can_record(bool can) { can_record_ = can; }
  bool group_recorded(int group) const;
  bool group_expanded(int group) const { return groups_[static_cast<size_t>(group)].expanded; }
  // Expands the groups that hold any of `ranks`, after a run asked to record them.
  void expand_ranks(const std::vector<int>& ranks);
  void expand_all(bool expanded);
  // The task drawn at a point of the viewport, if any.
  std::optional<TaskId> task_at(QPoint pos) const;
  // Outlines the run's critical path (when the run has one).
  void set_show_critical_path(bool show);
  // For tests: the critical tasks in the rows.
  size_t critical_in_rows() const;
  // A sentence about the rows (ranks recorded, streams), shown above the chart.
  QString rows_note() const;

 signals:
  void window_changed(double start_ns, double end_ns);
  // The user opened a group whose ranks the run did not record: run it again recording
  // `ranks` first.
  void record_requested(std::vector<int> ranks);

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
    std::vector<uint32_t> spans;     // indexes into the rank's recorded spans, by start
    std::vector<uint32_t> critical;  // those on the critical path, by start
  };
  struct Group {
    QString name;            // "node 3"
    std::vector<int> ranks;  // in order, recorded or not
    bool expanded = false;
  };
  static constexpr size_t kUnrecorded = SIZE_MAX;
  struct Shown {
    size_t row = 0;  // into all_rows_; kUnrecorded for a rank the run did not record
    int group = 0;
    bool first = false;  // the group's first row, which carries its name
    int rank = 0;
  };
  void make_groups();
  void rebuild_rows();
  const Row& row_at(int r) const { return all_rows_[rows_[static_cast<size_t>(r)].row]; }

  double ns_per_px() const;
  double x_of(double t_ns) const;
  double time_at(double x) const;
  int chart_width() const;
  int first_row() const;
  void update_scrollbars();
  void paint_axis(QPainter& p, int width);
  void paint_row(QPainter& p, const Shown& shown, int y);
  const Span* span_at(QPoint pos) const;  // the recorded span drawn there, if any
  QString describe(const Span& span) const;

  std::shared_ptr<const RunData> data_;
  std::vector<Row> all_rows_;      // every recorded rank's streams, rank by rank
  std::vector<size_t> rank_rows_;  // where each rank's rows begin in all_rows_ (+ end)
  std::vector<Group> groups_;
  std::vector<Shown> rows_;  // the rows on screen, top to bottom
  double total_ns_ = 1;
  double t0_ = 0;  // window start
  double window_ns_ = 1;
  bool show_critical_ = true;
  bool can_record_ = false;
  std::vector<int> recorded_on_request_;  // the ranks the shown run was asked to record
  RowGrouping grouping_ = RowGrouping::kAuto;
  std::optional<QPoint> drag_from_;
  double drag_t0_ = 0;
  int drag_row_ = 0;
};

}  // namespace dtsim::gui
