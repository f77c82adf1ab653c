// The background sweep.
#include "gui/sweep_runner.h"

#include <algorithm>
#include <atomic>

#include <QMetaObject>

#include "gui/scenario_run.h"
#include "runner/parallel_points.h"
#include "sim/input_error.h"

namespace dtsim::gui {

PointFigures figures_of(const nlohmann::ordered_json& summary) {
  PointFigures f;
  static_cast<HeadlineFigures&>(f) = headline_figures(summary);
  if (!f.completed) f.error = QStringLiteral("the run did not complete");
  return f;
}

SweepRunner::SweepRunner(QObject* parent) : QObject(parent) {}

SweepRunner::~SweepRunner() {
  stop_.request_stop();
  threads_.clear();  // joins
}

bool SweepRunner::start(std::vector<SweepPoint> points, const std::string& source, unsigned jobs) {
  if (running_) return false;
  threads_.clear();
  points_ = std::move(points);
  results_.assign(points_.size(), PointFigures{});
  stop_ = std::stop_source();
  running_ = true;
  remaining_ = static_cast<int>(points_.size());
  if (points_.empty()) {
    running_ = false;
    emit finished(false);
    return true;
  }
  const unsigned n = parallel_jobs(jobs, points_.size());
  auto next = std::make_shared<std::atomic<size_t>>(0);
  for (unsigned j = 0; j < n; ++j) {
    threads_.emplace_back([this, next, source, stop = stop_.get_token()] {
      for (size_t i; (i = (*next)++) < points_.size();) {
        PointFigures f;
        RunControl control;
        control.stop = stop;
        try {
          // After a cancel the points left are only counted off.
          if (!stop.stop_requested()) {
            const auto run = run_document(points_[i].document, source, control, /*record=*/false);
            if (run) f = figures_of(run->summary);
          }
        } catch (const InputError& e) {
          f.error = QString::fromStdString(describe_problems(e.problems(), "; "));
        } catch (const std::exception& e) {
          f.error = QStringLiteral("internal error: ") + e.what();
        }
        const bool stopped = stop.stop_requested();
        QMetaObject::invokeMethod(
            this,
            [this, i, f, stopped] {
              if (!stopped || f.completed) {  // a point that finished counts, cancel or not
                results_[i] = f;
                emit point_done(static_cast<int>(i));
              }
              if (--remaining_ == 0) {
                running_ = false;
                emit finished(stop_.stop_requested());
              }
            },
            Qt::QueuedConnection);
      }
    });
  }
  return true;
}

void SweepRunner::cancel() {
  if (running_) stop_.request_stop();
}

}  // namespace dtsim::gui
