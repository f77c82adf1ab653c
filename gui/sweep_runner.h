// Runs many variants of a scenario in the background, on every core, for the what-if and
// plan-grid views: each point's headline figures (step time, throughput, peak memory, the
// ranks out of memory) or what was wrong with it, reported to the GUI thread point by point.
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <QObject>
#include <QString>
#include <nlohmann/json.hpp>

#include "reports/headline_figures.h"

namespace dtsim::gui {

struct SweepPoint {
  QString label;                    // the value varied ("400Gbps"), or "TP 4 × PP 2"
  nlohmann::ordered_json document;  // the scenario with it applied
};

// A point's figures, or (not completed) what was wrong with it.
struct PointFigures : HeadlineFigures {
  QString error;  // bad input or a failure ("" when it completed)
};

// The figures of a summary (reports/summary.h's JSON), with an error when it did not complete.
PointFigures figures_of(const nlohmann::ordered_json& summary);

class SweepRunner : public QObject {
  Q_OBJECT

 public:
  explicit SweepRunner(QObject* parent = nullptr);
  ~SweepRunner() override;  // stops the points in flight and waits for them

  // Runs the points on `jobs` threads (0: one per core); false while a sweep is in flight.
  bool start(std::vector<SweepPoint> points, const std::string& source, unsigned jobs = 0);
  void cancel();
  bool running() const { return running_; }
  const std::vector<PointFigures>& results() const { return results_; }

 signals:
  void point_done(int index);
  void finished(bool cancelled);

 private:
  std::vector<SweepPoint> points_;
  std::vector<PointFigures> results_;
  std::stop_source stop_;
  std::vector<std::jthread> threads_;
  int remaining_ = 0;
  bool running_ = false;
};

}  // namespace dtsim::gui
