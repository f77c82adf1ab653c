// What the GUI tests share: the schema's fields, paths of bundled scenarios, running
// dtsim, waiting for a run, and where the screenshots go.
#pragma once

#include <string>

#include <QDir>
#include <QProcess>
#include <QSignalSpy>
#include <QString>
#include <QTest>

#include "gui/main_window.h"
#include "gui/scenario_schema.h"
#include "gui/schema_fields.h"

namespace dtsim::gui::test {

inline const Field& fields() {
  static const Field root = scenario_fields(scenario_schema());
  return root;
}

inline QString source_path(const std::string& relative) {
  return QString::fromStdString(std::string(DTSIM_SOURCE_DIR) + "/" + relative);
}

// Runs the `dtsim` command with `args`; true when it exits 0.
inline bool run_dtsim(const QStringList& args) {
  QProcess dtsim;
  dtsim.start(QStringLiteral(DTSIM_BINARY), args);
  return dtsim.waitForFinished(300000) && dtsim.exitStatus() == QProcess::NormalExit &&
         dtsim.exitCode() == 0;
}

// Runs the window's scenario and waits for the run to end; true when it finished.
inline bool run_and_wait(MainWindow& window, int timeout_ms = 300000) {
  QSignalSpy ended(&window, &MainWindow::run_ended);
  window.run();
  if (!ended.wait(timeout_ms)) return false;
  return ended.front().front().toBool();
}

// Screenshots go to DTSIM_GUI_SCREENSHOTS, else gui-screenshots/ in the working folder.
inline QString screenshot_path(const QString& name) {
  QString dir = qEnvironmentVariable("DTSIM_GUI_SCREENSHOTS");
  if (dir.isEmpty()) dir = QDir::current().filePath(QStringLiteral("gui-screenshots"));
  QDir().mkpath(dir);
  return QDir(dir).filePath(name);
}

}  // namespace dtsim::gui::test
