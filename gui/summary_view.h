// The run's headline figures as cards: step time, throughput, MFU, time to train, peak
// memory against capacity and the ranks out of memory, read from the summary that
// `dtsim run` writes.
#pragma once

#include <memory>

#include <QWidget>

#include "gui/scenario_run.h"

class QGridLayout;
class QLabel;

namespace dtsim::gui {

class SummaryView : public QWidget {
  Q_OBJECT

 public:
  explicit SummaryView(QWidget* parent = nullptr);
  void show_run(std::shared_ptr<const RunData> result);
  void clear();
  // The value, and the line under it, shown on the card titled `title` ("" when there is
  // none): for tests.
  QString card_value(const QString& title) const;
  QString card_detail(const QString& title) const;

 private:
  QString card_text(const QString& title, const QString& part) const;
  void add_card(const QString& title, const QString& value, const QString& detail,
                bool alarm = false, double fill = -1);

  QLabel* heading_;
  QGridLayout* cards_;
  QLabel* notes_;
};

}  // namespace dtsim::gui
