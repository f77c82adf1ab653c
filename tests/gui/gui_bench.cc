// dtsim-gui's responsiveness, measured (docs/performance.md): the timeline's repaint of a
// 1,024-GPU GPT-3 step (target: at most 50 ms), how long a cancel takes to give control back
// (target: under 1 s), and the longest the event loop waits while a run is in flight and
// its views are filled (target: under 200 ms, on 16,384 GPUs).
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QImage>
#include <QPainter>
#include <QTimer>
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <fstream>

#include "gui/main_window.h"
#include "gui/run_worker.h"
#include "gui/scenario_schema.h"
#include "gui/timeline_view.h"
#include "scenarios/loader.h"

namespace dtsim::gui {
namespace {

const std::string kGpt3 =
    std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/gpt3-175b-1024xA100.json";

const Field& fields() {
  static const Field root = scenario_fields(scenario_schema());
  return root;
}

// The GPT-3 example on `gpus` GPUs, as training_bench scales it.
nlohmann::ordered_json gpt3_on(int gpus) {
  std::ifstream in(kGpt3);
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  if (gpus != 1024) {
    doc["cluster"]["nodes"][0]["count"] = gpus / 8;
    doc["training"]["global_batch"] = 16 * (gpus / (8 * 16));  // 16 micro-batches per replica
  }
  return doc;
}

void BM_TimelineRepaint(benchmark::State& state) {
  const bool zoomed = state.range(0) == 1;
  static std::shared_ptr<const RunData> run = run_document(gpt3_on(1024), kGpt3);
  TimelineView view;
  view.resize(1280, 800);
  view.show_run(run);
  view.expand_all(true);  // every rank's rows, as a user who opened every node sees them
  if (zoomed) {           // a tenth of the step, from its middle
    const double end = static_cast<double>(run->run.result.end.count_ns());
    view.set_window(end * 0.45, end * 0.55);
  }
  QImage image(view.viewport()->size(), QImage::Format_ARGB32_Premultiplied);
  double worst = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    view.viewport()->render(&image);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    worst = std::max(worst, ms);
  }
  state.counters["rows"] = view.row_count();
  state.counters["worst_ms"] = worst;
}
BENCHMARK(BM_TimelineRepaint)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Starts a run of `document` in a window and calls `during` from the event loop every 5 ms
// until it ends; returns the longest gap between two calls, in ms.
double longest_gap_ms(MainWindow& window, const std::function<void(double elapsed_ms)>& during) {
  QEventLoop loop;
  QElapsedTimer clock;
  double last = 0, worst = 0;
  QTimer tick;
  tick.setInterval(5);
  QObject::connect(&tick, &QTimer::timeout, [&] {
    const double now = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    worst = std::max(worst, now - last);
    last = now;
    during(now);
  });
  QObject::connect(&window, &MainWindow::run_ended, &loop, [&] {
    const double now = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    worst = std::max(worst, now - last);
    loop.quit();
  });
  clock.start();
  tick.start();
  window.run();
  loop.exec();
  return worst;
}

void BM_CancelLatency(benchmark::State& state) {
  MainWindow window(fields());
  window.open_file(QString::fromStdString(kGpt3));
  double worst = 0;
  for (auto _ : state) {
    // Cancel once the simulation itself is under way (lowering is done).
    bool simulating = false;
    auto connection = QObject::connect(window.worker(), &RunWorker::progress,
                                       [&](const QString& phase, qint64, qint64) {
                                         simulating |= phase == QStringLiteral("simulation");
                                       });
    std::chrono::steady_clock::time_point asked;
    bool cancelled = false;
    longest_gap_ms(window, [&](double) {
      if (simulating && !cancelled) {
        asked = std::chrono::steady_clock::now();
        window.cancel();
        cancelled = true;
      }
    });
    QObject::disconnect(connection);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    if (!cancelled) state.SkipWithError("the run ended before it could be cancelled");
    state.SetIterationTime(s);
    worst = std::max(worst, s * 1e3);
  }
  state.counters["worst_ms"] = worst;
}
BENCHMARK(BM_CancelLatency)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_EventLoopGapDuringRun(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const std::string path = "/tmp/dtsim-gui-bench-gpt3.json";
  std::ofstream(path) << gpt3_on(gpus).dump(2);
  MainWindow window(fields());
  window.open_file(QString::fromStdString(path));
  double gap = 0;
  for (auto _ : state) {
    gap = longest_gap_ms(window, [](double) {});
    if (!window.last_run()) state.SkipWithError("the run did not finish");
  }
  state.counters["longest_gap_ms"] = gap;
}
BENCHMARK(BM_EventLoopGapDuringRun)
    ->Arg(1024)
    ->Arg(16384)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace dtsim::gui

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
