// The GUI's run thread.
#include "gui/run_worker.h"

#include <atomic>
#include <chrono>

#include <QMetaObject>

namespace dtsim::gui {

RunWorker::RunWorker(QObject* parent) : QObject(parent) {}

RunWorker::~RunWorker() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

bool RunWorker::start(const nlohmann::ordered_json& document, const std::string& source,
                      const RecordingChoice& choice) {
  if (running_) return false;
  if (thread_.joinable()) thread_.join();  // the last run's thread, already done
  running_ = true;
  thread_ = std::jthread([this, document, source, choice](std::stop_token stop) {
    // Posts `fn` to the GUI thread; dropped there if this worker is gone by then.
    auto post = [this](auto fn) {
      QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection);
    };
    RunControl control;
    control.stop = stop;
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    control.progress = [&](std::string_view phase, int64_t done, int64_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(50) && done < total) return;
      last = now;
      post([this, p = QString::fromUtf8(phase.data(), static_cast<qsizetype>(phase.size())), done,
            total] { emit progress(p, done, total); });
    };
    try {
      std::shared_ptr<const RunData> data = run_document(document, source, control, true, choice);
      post([this, data] {
        running_ = false;
        if (data) {
          emit finished(data);
        } else {
          emit cancelled();
        }
      });
    } catch (const InputError& e) {
      post([this, src = QString::fromStdString(e.source()), problems = e.problems()] {
        running_ = false;
        emit rejected(src, problems);
      });
    } catch (const std::exception& e) {
      post([this, what = QString::fromUtf8(e.what())] {
        running_ = false;
        emit failed(QStringLiteral("internal error: ") + what);
      });
    } catch (...) {
      post([this] {
        running_ = false;
        emit failed(QStringLiteral("internal error: an unknown exception"));
      });
    }
  });
  return true;
}

void RunWorker::cancel() {
  if (running_) thread_.request_stop();
}

}  // namespace dtsim::gui
