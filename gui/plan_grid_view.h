// The plan grid: every (TP, PP) plan of the open training scenario on its cluster
// (models::plan_grid), simulated in the background and drawn as a heat map of step time
// (our own widget: Qt Charts has none), out-of-memory cells hatched, plans that do not
// apply greyed with the reason on hover, the fastest plan that fits outlined. Clicking a
// cell opens that plan in the form.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QWidget>
#include <nlohmann/json.hpp>

#include "gui/sweep_runner.h"
#include "models/plan_grid.h"

class QLabel;
class QPushButton;
class QSpinBox;

namespace dtsim::gui {

class PlanHeatMap;

class PlanGridView : public QWidget {
  Q_OBJECT

 public:
  explicit PlanGridView(QWidget* parent = nullptr);

  void set_base(const nlohmann::ordered_json& document, const std::string& source);
  // Enumerates and starts the grid (micro-batch: the spin box's); false and the reason
  // shown when the scenario is not a valid training scenario.
  bool start();
  void cancel();
  bool running() const { return runner_->running(); }

  // For tests: the plans, their figures, and the fastest that fits (-1 when none).
  const std::vector<models::PlanPoint>& plans() const { return plans_; }
  const std::vector<PointFigures>& figures() const { return figures_; }
  int best() const;
  QString error_text() const;
  // What a click on the cell of plans()[index] does.
  void choose(int index);

 signals:
  void grid_finished(bool cancelled);
  // The user picked a plan to open.
  void plan_chosen(int tp, int pp, std::optional<int> micro_batch);

 private:
  nlohmann::ordered_json base_;
  std::string source_;
  std::vector<models::PlanPoint> plans_;
  std::vector<PointFigures> figures_;
  int micro_batch_ran_ = 0;
  int document_micro_batch_ = 0;  // the base document's, when set_base saw it last
  SweepRunner* runner_;
  QSpinBox* micro_batch_;
  QPushButton* run_;
  QPushButton* cancel_;
  QLabel* status_;
  PlanHeatMap* map_;
  friend class PlanHeatMap;
};

}  // namespace dtsim::gui
