// What-if: pick any scenario key (WAN bandwidth, TP degree, device type, micro-batch, number
// of nodes) and values or a range; the variants run in the background on every core and
// step time, throughput and peak memory are charted against the value, out-of-memory points
// marked. Up to three sweeps overlay for comparison.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <QString>
#include <QStringList>
#include <QWidget>
#include <nlohmann/json.hpp>

#include "gui/sweep_runner.h"

class QCheckBox;
class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace dtsim::gui {

// "1,2,4,8" as is; "1..8" every integer from 1 to 8; "1..64*2" 1, 2, 4, ... 64. Commas
// inside [..], {..} or "..." belong to a value. Adds a sentence to `error` when malformed.
QStringList expand_values(const QString& text, QString& error);

class WhatIfView : public QWidget {
  Q_OBJECT

 public:
  explicit WhatIfView(QWidget* parent = nullptr);

  // The scenario the next sweep varies (the form's document) and its file, for relative paths.
  void set_base(const nlohmann::ordered_json& document, const std::string& source);
  // Starts a sweep of `key` over `values` (the text expand_values reads); false and the
  // error shown when the key or a value does not apply.
  bool start(const QString& key, const QString& values);
  void cancel();
  bool running() const { return runner_->running(); }
  SweepRunner* runner() const { return runner_; }

  // For tests: the sweeps charted (newest last), their points and those marked out of memory.
  int sweeps() const { return static_cast<int>(sweeps_.size()); }
  int points_in_chart(int sweep) const;
  int oom_points_in_chart(int sweep) const;
  QString error_text() const;

 signals:
  void sweep_finished(bool cancelled);

 private:
  struct Sweep {
    QString key;
    QStringList values;
    std::vector<PointFigures> results;
  };
  void suggest_keys();
  void redraw();

  nlohmann::ordered_json base_;
  std::string source_;
  SweepRunner* runner_;
  std::deque<Sweep> sweeps_;  // at most three, the newest last
  QComboBox* key_;
  QLineEdit* values_;
  QCheckBox* overlay_;
  QPushButton* run_;
  QPushButton* cancel_;
  QLabel* status_;
  QLabel* error_;
  QChartView* step_chart_;
  QChartView* throughput_chart_;
  QChartView* memory_chart_;
};

}  // namespace dtsim::gui
