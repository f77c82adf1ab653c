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

#include "gui/main_window.h"
#include "gui/scenario_schema.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitBadInput = 2;

struct Args {
  std::string scenario;
  std::string screenshot;
  std::string view = "summary";
  std::string size = "1280x800";
};

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
    std::cerr << "error: --view: expected one of summary, memory, timeline, breakdown, got \""
              << args.view << "\"\n";
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
  cli.add_option("--view", args.view,
                 "The view --screenshot saves: summary, memory, timeline or breakdown");
  cli.add_option("--size", args.size, "The window size for --screenshot (default 1280x800)");
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
