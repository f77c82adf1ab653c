// Compare: the open scenario's run (A) against another scenario file or a run pinned
// earlier (B): a table of the inputs that differ and of the results side by side, and both
// timelines on one time axis, zoomed and panned together.
#pragma once

#include <memory>

#include <QWidget>

#include "gui/scenario_run.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace dtsim::gui {

class RunWorker;
class TimelineView;

// The document's leaves as dotted keys ("parallelism.tp") with their JSON text; arrays of
// scalars are one leaf, arrays of objects are entered ("cluster.nodes.0.count").
std::vector<std::pair<std::string, std::string>> flatten(const nlohmann::ordered_json& document);

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);

  // A: the window's latest run (nullptr clears it).
  void set_a(std::shared_ptr<const RunData> a);
  // B: a run already made (the pinned run) or a scenario file, run in the background.
  void set_b(std::shared_ptr<const RunData> b);
  bool compare_with_file(const QString& path);
  bool running() const;

  // For tests.
  QTableWidget* table() const { return table_; }
  TimelineView* timeline_a() const { return timeline_a_; }
  TimelineView* timeline_b() const { return timeline_b_; }
  // The row of the table whose first cell is `key`, or -1.
  int row_of(const QString& key) const;

 signals:
  void b_ready(bool ok);

 private:
  void refresh();

  std::shared_ptr<const RunData> a_;
  std::shared_ptr<const RunData> b_;
  RunWorker* worker_;
  QPushButton* open_;
  QPushButton* pin_;
  QLabel* status_;
  QTableWidget* table_;
  TimelineView* timeline_a_;
  TimelineView* timeline_b_;
  QLabel* label_a_;
  QLabel* label_b_;
};

}  // namespace dtsim::gui
