// Runs a scenario document on a thread of its own and reports to the GUI thread: progress
// at most every 50 ms, then exactly one of finished, failed or cancelled. The window stays
// responsive; cancel() stops the lowering or simulation in flight through RunControl.
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <QObject>
#include <QString>
#include <nlohmann/json.hpp>

#include "gui/scenario_run.h"
#include "sim/input_error.h"

namespace dtsim::gui {

class RunWorker : public QObject {
  Q_OBJECT

 public:
  explicit RunWorker(QObject* parent = nullptr);
  ~RunWorker() override;  // stops a run in flight and waits for its thread

  // Starts a run, recording the ranks `choice` asks for first; false (and nothing
  // started) while one is in flight.
  bool start(const nlohmann::ordered_json& document, const std::string& source,
             const RecordingChoice& choice = {});
  void cancel();
  bool running() const { return running_; }

 signals:
  void progress(const QString& phase, qint64 done, qint64 total);
  void finished(std::shared_ptr<const dtsim::gui::RunData> data);
  // Bad input: the problems at their JSON pointers (the editor marks those fields).
  void rejected(const QString& source, const std::vector<dtsim::InputProblem>& problems);
  // Anything else that went wrong inside the run.
  void failed(const QString& message);
  void cancelled();

 private:
  std::jthread thread_;
  bool running_ = false;
};

}  // namespace dtsim::gui
