// Topology: the cluster's devices, hosts, NICs, switches and region gateways in tiers (by
// hops from the devices), every cable drawn once and coloured by how busy it was during the
// run; wheel to zoom, drag to pan, click a link for its figures.
#pragma once

#include <memory>
#include <optional>

#include <QGraphicsView>

#include "gui/scenario_run.h"

class QGraphicsScene;
class QLabel;

namespace dtsim::gui {

class TopologyView : public QWidget {
  Q_OBJECT

 public:
  explicit TopologyView(QWidget* parent = nullptr);
  // Keeps the run; the drawing is made when the view is first shown (or asked about), so
  // that a run's end does not wait for a view nobody looks at.
  void show_run(std::shared_ptr<const RunData> result);
  void clear();

  // Shows a link's figures as a click on it does.
  void select_link(LinkId link);
  // For tests.
  int vertices_drawn() {
    draw();
    return vertices_drawn_;
  }
  int cables_drawn() {
    draw();
    return cables_drawn_;
  }
  QString details() const;
  // The mean utilisation over the step that colours a link: bytes / (bandwidth x step).
  static double mean_utilization(const RunData& run, LinkId link);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  class Canvas;
  void draw();  // the scene of data_, unless drawn already
  bool drawn_ = false;
  std::shared_ptr<const RunData> data_;
  QGraphicsScene* scene_;
  Canvas* canvas_;
  QLabel* details_;
  QLabel* legend_;
  int vertices_drawn_ = 0;
  int cables_drawn_ = 0;
};

}  // namespace dtsim::gui
