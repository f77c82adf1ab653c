// dtsim-gui's window: the scenario on the left (the form and the raw JSON, undo/redo,
// problems at their fields), the run's views on the right (summary, memory, timeline, topology,
// breakdown, what-if sweeps, the plan grid, compare), runs on a worker thread with progress and
// cancel.
#pragma once

#include <memory>
#include <optional>

#include <QMainWindow>
#include <QString>
#include <nlohmann/json.hpp>

#include "gui/scenario_run.h"
#include "gui/schema_fields.h"

class QAction;
class QLabel;
class QMenu;
class QProgressBar;
class QTabWidget;
class QTimer;
class QUndoStack;

namespace dtsim::gui {

class BreakdownView;
class FormEditor;
class JsonEditor;
class MemoryView;
class RunWorker;
class SummaryView;
class TimelineView;
class WhatIfView;
class PlanGridView;
class CompareView;
class TopologyView;

// The views after a run, by the names --screenshot --view takes.
inline constexpr const char* kViewNames[] = {"summary",   "memory", "timeline", "topology",
                                             "breakdown", "whatif", "plangrid", "compare"};

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(const Field& schema_fields, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a scenario file: its problems are shown at their fields; a file that is not
  // JSON opens in the JSON tab with its syntax error. False when it cannot be read.
  bool open_file(const QString& path);
  bool save_to(const QString& path);
  void run();
  void cancel();
  bool running() const;
  // Validates the document now (the form does it 300 ms after the last edit).
  void validate_now();
  bool show_view(const QString& name);

  FormEditor* form() const { return form_; }
  JsonEditor* json_editor() const { return json_; }
  SummaryView* summary_view() const { return summary_; }
  MemoryView* memory_view() const { return memory_; }
  TimelineView* timeline_view() const { return timeline_; }
  BreakdownView* breakdown_view() const { return breakdown_; }
  WhatIfView* whatif_view() const { return whatif_; }
  PlanGridView* plan_grid_view() const { return plan_grid_; }
  CompareView* compare_view() const { return compare_; }
  TopologyView* topology_view() const { return topology_; }
  QUndoStack* undo_stack() const { return undo_; }
  RunWorker* worker() const { return worker_; }
  std::shared_ptr<const RunData> last_run() const { return last_run_; }
  // How many task spans a run records for the timeline (RunRecording); tests lower it to
  // see a large run's behaviour on a small one.
  void set_span_budget(int64_t spans) { span_budget_ = spans; }
  QString run_error() const;

 signals:
  // Emitted once per run: after the views show a finished run, or when it ended without
  // one (bad input, an internal error, cancelled).
  void run_ended(bool finished);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void build_menus();
  void open_dialog();
  bool save();
  bool save_as();
  bool confirm_discard();
  void remember_recent(const QString& path);
  void fill_recent_menu();
  void set_path(const QString& path);
  std::string source() const;  // the scenario's file, for messages and relative paths
  void show_run(std::shared_ptr<const RunData> result);
  // Runs the shown run's document again, recording `ranks` first (the timeline's groups
  // beyond the span budget), and comes back to the same window of time with them open.
  void record_ranks(const std::vector<int>& ranks);
  void show_run_error(const QString& text);
  void set_running(bool running);

  QUndoStack* undo_;
  FormEditor* form_;
  JsonEditor* json_;
  QTabWidget* left_;
  QTabWidget* views_;
  SummaryView* summary_;
  MemoryView* memory_;
  TimelineView* timeline_;
  BreakdownView* breakdown_;
  WhatIfView* whatif_;
  PlanGridView* plan_grid_;
  CompareView* compare_;
  TopologyView* topology_;
  QLabel* run_error_;
  QLabel* timeline_note_;
  RunWorker* worker_;
  QTimer* validate_timer_;
  QProgressBar* progress_;
  QLabel* status_;
  QAction* run_action_;
  QAction* cancel_action_;
  QMenu* recent_menu_;
  QString path_;
  std::shared_ptr<const RunData> last_run_;
  bool discard_run_ = false;  // the run in flight belongs to a file no longer open
  // A run in flight that records ranks the timeline asked for: where to come back to.
  struct RecordingRequest {
    std::vector<int> ranks;
    double window_start = 0;
    double window_end = 0;
  };
  std::optional<RecordingRequest> recording_request_;
  int64_t span_budget_ = kSpanBudget;
};

}  // namespace dtsim::gui
