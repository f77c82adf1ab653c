// dtsim-gui's main window.
#include "gui/main_window.h"

#include <algorithm>
#include <utility>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QCloseEvent>
#include <QHBoxLayout>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>

#include "gui/breakdown_view.h"
#include "gui/compare_view.h"
#include "gui/figures.h"
#include "gui/form_editor.h"
#include "gui/json_editor.h"
#include "gui/memory_view.h"
#include "gui/plan_grid_view.h"
#include "gui/run_worker.h"
#include "gui/summary_view.h"
#include "gui/timeline_view.h"
#include "gui/topology_view.h"
#include "gui/whatif_view.h"
#include "reports/atomic_file.h"
#include "runner/plan_variants.h"

namespace dtsim::gui {
namespace {

constexpr int kRecentFiles = 8;
constexpr const char* kUnsaved = "<unsaved>";

}  // namespace

MainWindow::MainWindow(const Field& schema_fields, QWidget* parent) : QMainWindow(parent) {
  undo_ = new QUndoStack(this);
  worker_ = new RunWorker(this);

  auto* split = new QSplitter(this);
  left_ = new QTabWidget(split);
  form_ = new FormEditor(schema_fields, undo_, left_);
  json_ = new JsonEditor(left_);
  left_->addTab(form_, QStringLiteral("Scenario"));
  left_->addTab(json_, QStringLiteral("JSON"));

  auto* right = new QWidget(split);
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  run_error_ = new QLabel(right);
  run_error_->setWordWrap(true);
  run_error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  run_error_->setStyleSheet(QStringLiteral("color: #b00020; background: #fdecea; padding: 6px;"));
  run_error_->hide();
  right_layout->addWidget(run_error_);
  views_ = new QTabWidget(right);
  summary_ = new SummaryView(views_);
  memory_ = new MemoryView(views_);
  auto* timeline_page = new QWidget(views_);
  auto* timeline_layout = new QVBoxLayout(timeline_page);
  timeline_note_ = new QLabel(timeline_page);
  timeline_note_->setTextFormat(Qt::RichText);
  timeline_note_->setWordWrap(true);
  timeline_ = new TimelineView(timeline_page);
  auto* timeline_bar = new QHBoxLayout;
  timeline_bar->addWidget(timeline_note_, 1);
  auto* critical = new QCheckBox(QStringLiteral("critical path"), timeline_page);
  critical->setChecked(true);
  critical->setToolTip(QStringLiteral("Outline the chain of tasks that set the step's end"));
  connect(critical, &QCheckBox::toggled, timeline_, &TimelineView::set_show_critical_path);
  timeline_bar->addWidget(critical);
  auto* grouping = new QComboBox(timeline_page);
  grouping->addItems({QStringLiteral("rows: auto"), QStringLiteral("rows: per node"),
                      QStringLiteral("rows: per stage"), QStringLiteral("rows: per rank")});
  grouping->setToolTip(QStringLiteral(
      "How the rows are grouped (auto: per node beyond 32 ranks, else a row per rank)"));
  connect(grouping, &QComboBox::activated, this, [this](int i) {
    constexpr RowGrouping kChoices[] = {RowGrouping::kAuto, RowGrouping::kNodes,
                                        RowGrouping::kStages, RowGrouping::kRanks};
    timeline_->set_grouping(kChoices[std::clamp(i, 0, 3)]);
  });
  timeline_bar->addWidget(grouping);
  timeline_layout->addLayout(timeline_bar);
  timeline_layout->addWidget(timeline_, 1);
  timeline_->set_can_record(true);
  connect(timeline_, &TimelineView::record_requested, this, &MainWindow::record_ranks);
  breakdown_ = new BreakdownView(views_);
  views_->addTab(summary_, QStringLiteral("Summary"));
  views_->addTab(memory_, QStringLiteral("Memory"));
  views_->addTab(timeline_page, QStringLiteral("Timeline"));
  topology_ = new TopologyView(views_);
  views_->addTab(topology_, QStringLiteral("Topology"));
  views_->addTab(breakdown_, QStringLiteral("Breakdown"));
  whatif_ = new WhatIfView(views_);
  views_->addTab(whatif_, QStringLiteral("What-if"));
  plan_grid_ = new PlanGridView(views_);
  views_->addTab(plan_grid_, QStringLiteral("Plan grid"));
  compare_ = new CompareView(views_);
  views_->addTab(compare_, QStringLiteral("Compare"));
  connect(
      plan_grid_, &PlanGridView::plan_chosen, this,
      [this](int tp, int pp, std::optional<int> micro_batch) {
        form_->edit("", plan_variant(form_->document(), models::PlanPoint{tp, pp, 0}, micro_batch));
        left_->setCurrentWidget(form_);
        status_->setText(QStringLiteral("Opened the plan TP %1 × PP %2: Run to see it in full.")
                             .arg(tp)
                             .arg(pp));
      });
  right_layout->addWidget(views_);
  split->addWidget(left_);
  split->addWidget(right);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  split->setSizes({500, 780});
  setCentralWidget(split);

  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(260);
  progress_->hide();
  status_ = new QLabel(this);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);

  validate_timer_ = new QTimer(this);
  validate_timer_->setSingleShot(true);
  validate_timer_->setInterval(300);
  connect(validate_timer_, &QTimer::timeout, this, &MainWindow::validate_now);
  connect(form_, &FormEditor::document_changed, this, [this] {
    validate_timer_->start();
    json_->show_document(form_->document());
    whatif_->set_base(form_->document(), source());
    plan_grid_->set_base(form_->document(), source());
  });
  connect(json_, &JsonEditor::applied, this,
          [this](const nlohmann::ordered_json& d) { form_->edit("", d); });
  connect(undo_, &QUndoStack::cleanChanged, this,
          [this](bool clean) { setWindowModified(!clean); });

  connect(worker_, &RunWorker::progress, this,
          [this](const QString& phase, qint64 done, qint64 total) {
            progress_->setRange(0, 1000);
            progress_->setValue(total > 0 ? static_cast<int>(1000 * done / total) : 0);
            progress_->setFormat(phase + " %p%");
            progress_->setTextVisible(true);
          });
  connect(worker_, &RunWorker::finished, this, [this](std::shared_ptr<const RunData> result) {
    set_running(false);
    const auto request = std::exchange(recording_request_, std::nullopt);
    if (std::exchange(discard_run_, false)) return emit run_ended(false);
    show_run(std::move(result));
    if (request && last_run_) {
      timeline_->expand_ranks(request->ranks);
      timeline_->set_window(request->window_start, request->window_end);
      timeline_note_->setText(timeline_->rows_note());
    }
    emit run_ended(last_run_ != nullptr);
  });
  connect(worker_, &RunWorker::rejected, this,
          [this](const QString&, const std::vector<InputProblem>& problems) {
            set_running(false);
            recording_request_.reset();
            if (std::exchange(discard_run_, false)) return emit run_ended(false);
            form_->show_problems(problems);
            left_->setCurrentWidget(form_);
            show_run_error(QStringLiteral("The scenario has %1 problem(s), marked at their fields.")
                               .arg(problems.size()));
            emit run_ended(false);
          });
  connect(worker_, &RunWorker::failed, this, [this](const QString& message) {
    set_running(false);
    recording_request_.reset();
    if (std::exchange(discard_run_, false)) return emit run_ended(false);
    show_run_error(message);
    emit run_ended(false);
  });
  connect(worker_, &RunWorker::cancelled, this, [this] {
    set_running(false);
    recording_request_.reset();
    discard_run_ = false;
    status_->setText(QStringLiteral("Run cancelled."));
    emit run_ended(false);
  });

  build_menus();
  set_path({});
  resize(1280, 800);
}

MainWindow::~MainWindow() = default;

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  QToolBar* bar = addToolBar(QStringLiteral("Main"));
  bar->setMovable(false);
  auto add = [&](QMenu* menu, const QString& text, QKeySequence keys, auto slot,
                 bool on_bar = true) {
    QAction* a = menu->addAction(text);
    a->setShortcut(keys);
    connect(a, &QAction::triggered, this, slot);
    if (on_bar) bar->addAction(a);
    return a;
  };
  add(file, QStringLiteral("&Open…"), QKeySequence::Open, [this] { open_dialog(); });
  recent_menu_ = file->addMenu(QStringLiteral("Open &Recent"));
  add(file, QStringLiteral("&Save"), QKeySequence::Save, [this] { save(); });
  add(
      file, QStringLiteral("Save &As…"), QKeySequence::SaveAs, [this] { save_as(); }, false);
  file->addSeparator();
  add(
      file, QStringLiteral("&Quit"), QKeySequence::Quit, [this] { close(); }, false);
  QMenu* edit = menuBar()->addMenu(QStringLiteral("&Edit"));
  QAction* undo = undo_->createUndoAction(this, QStringLiteral("&Undo"));
  undo->setShortcut(QKeySequence::Undo);
  QAction* redo = undo_->createRedoAction(this, QStringLiteral("&Redo"));
  redo->setShortcut(QKeySequence::Redo);
  edit->addAction(undo);
  edit->addAction(redo);
  bar->addSeparator();
  bar->addAction(undo);
  bar->addAction(redo);
  bar->addSeparator();
  QMenu* run_menu = menuBar()->addMenu(QStringLiteral("&Run"));
  run_action_ =
      add(run_menu, QStringLiteral("&Run"), QKeySequence(Qt::CTRL | Qt::Key_R), [this] { run(); });
  cancel_action_ =
      add(run_menu, QStringLiteral("&Cancel"), QKeySequence(Qt::Key_Escape), [this] { cancel(); });
  cancel_action_->setEnabled(false);
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::fill_recent_menu);
}

void MainWindow::set_path(const QString& path) {
  path_ = path;
  setWindowTitle(
      QStringLiteral("%1[*] — dtsim")
          .arg(path.isEmpty() ? QStringLiteral("untitled") : QFileInfo(path).fileName()));
}

bool MainWindow::open_file(const QString& path) {
  QString read_error;
  const std::optional<std::string> text = read_scenario_file(path, read_error);
  if (!text) {
    show_run_error(read_error);
    return false;
  }
  set_path(path);
  remember_recent(path);
  // A run of the file open before is of no use now: stop it and drop what it brings.
  if (running()) {
    worker_->cancel();
    discard_run_ = true;
  }
  summary_->clear();
  memory_->clear();
  timeline_->clear();
  topology_->clear();
  breakdown_->clear();
  compare_->set_a(nullptr);
  last_run_.reset();
  run_error_->hide();
  QString parse_error;
  const std::optional<nlohmann::ordered_json> document = parse_scenario_text(*text, parse_error);
  if (!document) {
    // Not a JSON object that reads strictly: the text goes to the JSON tab as it is (nothing
    // of it lost), with what is wrong and where.
    form_->load(nlohmann::ordered_json::object());
    json_->set_text(QString::fromStdString(*text));
    json_->apply();
    left_->setCurrentWidget(json_);
    show_run_error(QStringLiteral("%1 is not a valid JSON object: fix it in the JSON tab. %2")
                       .arg(path, parse_error));
    return true;
  }
  form_->load(*document);
  json_->reset(*document);
  undo_->setClean();
  validate_now();
  status_->setText(QStringLiteral("Opened %1").arg(path));
  return true;
}

void MainWindow::open_dialog() {
  if (!confirm_discard()) return;
  const QString path =
      QFileDialog::getOpenFileName(this, QStringLiteral("Open a scenario"), QFileInfo(path_).path(),
                                   QStringLiteral("Scenarios (*.json);;All files (*)"));
  if (!path.isEmpty()) open_file(path);
}

bool MainWindow::save_to(const QString& path) {
  form_->commit_pending();
  try {
    write_file_atomically(path.toStdString(), form_->document().dump(2) + "\n");
  } catch (const std::exception& e) {
    show_run_error(QString::fromUtf8(e.what()));
    return false;
  }
  set_path(path);
  remember_recent(path);
  undo_->setClean();
  status_->setText(QStringLiteral("Saved %1").arg(path));
  return true;
}

bool MainWindow::save() { return path_.isEmpty() ? save_as() : save_to(path_); }

bool MainWindow::save_as() {
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Save the scenario"),
                                                    path_, QStringLiteral("Scenarios (*.json)"));
  return !path.isEmpty() && save_to(path);
}

bool MainWindow::confirm_discard() {
  if (undo_->isClean()) return true;
  const auto answer = QMessageBox::question(
      this, QStringLiteral("Unsaved changes"),
      QStringLiteral("The scenario has changes that are not saved. Save them?"),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
  if (answer == QMessageBox::Save) return save();
  return answer == QMessageBox::Discard;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!confirm_discard()) {
    event->ignore();
    return;
  }
  worker_->cancel();
  event->accept();
}

void MainWindow::remember_recent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recent").toStringList();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > kRecentFiles) recent.removeLast();
  settings.setValue("recent", recent);
}

void MainWindow::fill_recent_menu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value("recent").toStringList();
  for (const QString& path : recent) {
    connect(recent_menu_->addAction(path), &QAction::triggered, this, [this, path] {
      if (confirm_discard()) open_file(path);
    });
  }
  if (recent.isEmpty()) recent_menu_->addAction(QStringLiteral("(none yet)"))->setEnabled(false);
}

std::string MainWindow::source() const { return path_.isEmpty() ? kUnsaved : path_.toStdString(); }

void MainWindow::validate_now() {
  validate_timer_->stop();
  try {
    load_document(form_->document(), source());
    form_->clear_problems();
    if (!running()) status_->setText(QStringLiteral("The scenario is valid."));
  } catch (const InputError& e) {
    form_->show_problems(e.problems());
    status_->setText(QStringLiteral("The scenario has %1 problem(s), marked at their fields.")
                         .arg(e.problems().size()));
  } catch (const std::exception& e) {
    status_->setText(QStringLiteral("Validation failed: ") + e.what());
  }
}

void MainWindow::run() {
  if (running()) return;
  form_->commit_pending();
  run_error_->hide();
  last_run_.reset();
  if (!worker_->start(form_->document(), source(), RecordingChoice{{}, span_budget_})) return;
  set_running(true);
  status_->setText(QStringLiteral("Running…"));
}

void MainWindow::record_ranks(const std::vector<int>& ranks) {
  if (running() || !last_run_) return;
  run_error_->hide();
  if (!worker_->start(last_run_->document, last_run_->source, RecordingChoice{ranks, span_budget_}))
    return;
  recording_request_ =
      RecordingRequest{ranks, timeline_->window_start(), timeline_->window_end()};
  set_running(true);
  const auto missing = std::count_if(ranks.begin(), ranks.end(),
                                     [&](int r) { return !last_run_->recording->recorded(r); });
  status_->setText(QStringLiteral("Running again to record %1 more rank(s)…").arg(missing));
}

void MainWindow::cancel() { worker_->cancel(); }

bool MainWindow::running() const { return worker_->running(); }

void MainWindow::set_running(bool running) {
  run_action_->setEnabled(!running);
  cancel_action_->setEnabled(running);
  progress_->setVisible(running);
  if (running) {
    progress_->setRange(0, 0);  // busy until the first progress report
  }
}

void MainWindow::show_run(std::shared_ptr<const RunData> result) {
  form_->clear_problems();
  // A view that cannot show the run says so; the window and the other views go on.
  try {
    summary_->show_run(result);
    memory_->show_run(result);
    timeline_->show_run(result);
    timeline_note_->setText(timeline_->rows_note());
    topology_->show_run(result);
    breakdown_->show_run(result);
    compare_->set_a(result);
  } catch (const std::exception& e) {
    show_run_error(QStringLiteral("internal error while showing the run: ") + e.what());
    return;
  }
  last_run_ = result;
  status_->setText(QStringLiteral("Ran %1: step %2")
                       .arg(QString::fromStdString(result->summary.value("scenario", "")),
                            seconds_text(result->step_seconds())));
}

void MainWindow::show_run_error(const QString& text) {
  run_error_->setText(text);
  run_error_->show();
  status_->setText(text.section('\n', 0, 0));
}

QString MainWindow::run_error() const {
  return run_error_->isHidden() ? QString() : run_error_->text();
}

bool MainWindow::show_view(const QString& name) {
  for (int i = 0; i < static_cast<int>(std::size(kViewNames)); ++i) {
    if (name == kViewNames[i]) {
      views_->setCurrentIndex(i);
      return true;
    }
  }
  return false;
}

}  // namespace dtsim::gui
