// dtsim-gui [SCENARIO]: the what-if planning window; with --screenshot it opens the
// scenario, runs it, saves one view as a PNG and exits (for documentation and checks).
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <QApplication>
#include <QEventLoop>
#include <QImage>
#include <QPixmap>

#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/plan_grid_view.h"
#include "gui/scenario_schema.h"
#include "gui/whatif_view.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;

struct Args {
  std::string scenario;
  std::string screenshot;
  std::string view = "summary";
  std::string size = "1280x800";
  std::string vary;     // KEY=V1,V2,... for the whatif view
  std::string compare;  // the other scenario for the compare view
};

std::string view_names() {
  std::string out;
  for (const char* name : dtsim::gui::kViewNames)
    out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

bool parse_size(const std::string& text, int& width, int& height) {
  const size_t x = text.find('x');
  if (x == std::string::npos) return false;
  try {
    width = std::stoi(text.substr(0, x));
    height = std::stoi(text.substr(x + 1));
  } catch (const std::exception&) {
    return false;
  }
  return width >= 320 && height >= 240 && width <= 8192 && height <= 8192;
}

int screenshot(dtsim::gui::MainWindow& window, const Args& args) {
  int width = 0, height = 0;
  if (!parse_size(args.size, width, height)) {
    std::cerr << "error: --size: expected WIDTHxHEIGHT between 320x240 and 8192x8192, got \""
              << args.size << "\"\n";
    return kExitBadInput;
  }
  if (!window.show_view(QString::fromStdString(args.view))) {
    std::cerr << "error: --view: expected one of " << view_names() << ", got \"" << args.view
              << "\"\n";
    return kExitBadInput;
  }
  const size_t eq = args.vary.find('=');
  if ((args.view == "whatif") == args.vary.empty() ||
      (!args.vary.empty() && (eq == 0 || eq == std::string::npos))) {
    std::cerr
        << "error: --vary KEY=V1,V2,... goes with --view whatif, and --view whatif needs it\n";
    return kExitBadInput;
  }
  if ((args.view == "compare") == args.compare.empty()) {
    std::cerr
        << "error: --compare OTHER.json goes with --view compare, and --view compare needs it\n";
    return kExitBadInput;
  }
  if (!window.open_file(QString::fromStdString(args.scenario))) {
    std::cerr << "error: " << window.run_error().toStdString() << "\n";
    return kExitBadInput;
  }
  window.resize(width, height);
  window.show();
  bool finished = false;
  QEventLoop loop;
  QObject::connect(&window, &dtsim::gui::MainWindow::run_ended, &loop, [&](bool ok) {
    finished = ok;
    loop.quit();
  });
  window.run();
  loop.exec();
  if (!finished) {
    std::cerr << "error: " << args.scenario << ": " << window.run_error().toStdString() << "\n";
    return window.last_run() ? kExitRunFailed : kExitBadInput;
  }
  window.show_view(QString::fromStdString(args.view));
  if (!args.vary.empty()) {
    dtsim::gui::WhatIfView* whatif = window.whatif_view();
    QEventLoop sweep;
    QObject::connect(whatif, &dtsim::gui::WhatIfView::sweep_finished, &sweep, &QEventLoop::quit);
    if (!whatif->start(QString::fromStdString(args.vary.substr(0, eq)),
                       QString::fromStdString(args.vary.substr(eq + 1)))) {
      std::cerr << "error: --vary: " << whatif->error_text().toStdString() << "\n";
      return kExitBadInput;
    }
    sweep.exec();
  }
  if (!args.compare.empty()) {
    dtsim::gui::CompareView* compare = window.compare_view();
    QEventLoop wait;
    bool ok = false;
    QObject::connect(compare, &dtsim::gui::CompareView::b_ready, &wait, [&](bool b_ok) {
      ok = b_ok;
      wait.quit();
    });
    if (!compare->compare_with_file(QString::fromStdString(args.compare))) {
      std::cerr << "error: --compare: " << args.compare << " cannot be read as a JSON scenario\n";
      return kExitBadInput;
    }
    wait.exec();
    if (!ok) {
      std::cerr << "error: --compare: " << args.compare
                << " did not run (see the window's message)\n";
      return kExitBadInput;
    }
  }
  if (args.view == "plangrid") {
    dtsim::gui::PlanGridView* grid = window.plan_grid_view();
    QEventLoop wait;
    QObject::connect(grid, &dtsim::gui::PlanGridView::grid_finished, &wait, &QEventLoop::quit);
    if (!grid->start()) {
      std::cerr << "error: the plan grid: " << grid->error_text().toStdString() << "\n";
      return kExitBadInput;
    }
    wait.exec();
  }
  QApplication::processEvents();
  if (!window.grab().save(QString::fromStdString(args.screenshot), "PNG")) {
    std::cerr << "error: --screenshot: cannot write " << args.screenshot << "\n";
    return kExitRunFailed;
  }
  std::cout << "wrote " << args.screenshot << " (" << args.view << ", " << width << "x" << height
            << ")\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);  // takes Qt's own options (-platform, …) out of argv
  QApplication::setOrganizationName(QStringLiteral("dtsim"));
  QApplication::setApplicationName(QStringLiteral("dtsim-gui"));

  CLI::App cli(
      "dtsim-gui: plan training runs on GPU clusters: edit a scenario, run it, see where the time "
      "and the memory go");
  Args args;
  cli.add_option("scenario", args.scenario, "Scenario JSON file to open");
  cli.add_option("--screenshot", args.screenshot,
                 "Open and run SCENARIO, save a view as this PNG, and exit");
  cli.add_option("--view", args.view, "The view --screenshot saves: " + view_names());
  cli.add_option("--size", args.size, "The window size for --screenshot (default 1280x800)");
  cli.add_option("--compare", args.compare,
                 "With --view compare: the scenario to compare SCENARIO with");
  cli.add_option("--vary", args.vary,
                 "With --view whatif: the sweep to chart, KEY=V1,V2,... (or lo..hi)");
  const QStringList arguments = QApplication::arguments();
  std::vector<std::string> owned;
  for (const QString& a : arguments) owned.push_back(a.toStdString());
  std::vector<char*> pointers;
  for (std::string& a : owned) pointers.push_back(a.data());
  try {
    cli.parse(static_cast<int>(pointers.size()), pointers.data());
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  if (!args.screenshot.empty() && args.scenario.empty()) {
    std::cerr << "error: --screenshot needs a SCENARIO to open\n";
    return kExitBadInput;
  }

  const dtsim::gui::Field fields = dtsim::gui::scenario_fields(dtsim::gui::scenario_schema());
  dtsim::gui::MainWindow window(fields);
  if (!args.screenshot.empty()) return screenshot(window, args);
  window.show();
  if (!args.scenario.empty()) window.open_file(QString::fromStdString(args.scenario));
  return QApplication::exec();
}
