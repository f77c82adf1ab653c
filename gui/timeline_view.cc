// The Gantt chart of a run.
#include "gui/timeline_view.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include "gui/figures.h"

namespace dtsim::gui {
namespace {

constexpr int kGutter = 150;  // row labels
constexpr int kAxis = 28;     // the time axis on top
constexpr int kRowHeight = 18;
constexpr int kScrollUnits = 1000000;  // the horizontal bar's range, a fraction of the step

QColor kind_color(TaskKind k) {
  switch (k) {
    case TaskKind::kCompute:
      return QColor(0x4e, 0x79, 0xa7);
    case TaskKind::kCollective:
      return QColor(0xf2, 0x8e, 0x2b);
    case TaskKind::kSend:
    case TaskKind::kRecv:
      return QColor(0x59, 0xa1, 0x4f);
    case TaskKind::kMemcpy:
      return QColor(0xb0, 0x7a, 0xa1);
    default:
      return QColor(0x9e, 0x9e, 0x9e);
  }
}

// A tick step of 1, 2 or 5 times a power of ten, at least `min_ns`.
double tick_step(double min_ns) {
  const double p = std::pow(10.0, std::floor(std::log10(std::max(min_ns, 1e-3))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= min_ns) return m * p;
  }
  return 10 * p;
}

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QAbstractScrollArea(parent) {
  setMouseTracking(true);
  viewport()->setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  horizontalScrollBar()->setRange(0, 0);
  verticalScrollBar()->setSingleStep(1);
}

void TimelineView::clear() {
  data_.reset();
  rows_.clear();
  all_rows_.clear();
  rank_rows_.clear();
  groups_.clear();
  total_ns_ = window_ns_ = 1;
  t0_ = 0;
  update_scrollbars();
  viewport()->update();
}

void TimelineView::show_run(std::shared_ptr<const RunData> result) {
  data_ = std::move(result);
  recorded_on_request_.clear();
  rows_.clear();
  all_rows_.clear();
  rank_rows_.clear();
  groups_.clear();
  const TaskGraph& graph = data_->lowered.graph;
  const RunRecording& recording = *data_->recording;
  for (int rank = 0; rank < recording.ranks(); ++rank) {
    rank_rows_.push_back(all_rows_.size());
    const auto& rs = recording.spans(rank);
    std::vector<Row> streams(graph.streams().size());
    for (uint32_t i = 0; i < rs.size(); ++i) {
      const TaskView t = graph.task(rs[i].task);
      if (t.kind == TaskKind::kAlloc || t.kind == TaskKind::kFree) continue;  // the memory view's
      streams[t.stream].spans.push_back(i);
      if (!data_->on_critical_path.empty() && data_->on_critical_path[rs[i].task])
        streams[t.stream].critical.push_back(i);
    }
    for (uint16_t s = 0; s < streams.size(); ++s) {
      if (streams[s].spans.empty()) continue;
      streams[s].rank = rank;
      streams[s].stream = s;
      all_rows_.push_back(std::move(streams[s]));
    }
  }
  rank_rows_.push_back(all_rows_.size());
  make_groups();
  rebuild_rows();
  total_ns_ = std::max(1.0, static_cast<double>(data_->run.result.end.count_ns()));
  show_all();
}

void TimelineView::set_grouping(RowGrouping grouping) {
  grouping_ = grouping;
  if (!data_) return;
  make_groups();
  rebuild_rows();
}

void TimelineView::make_groups() {
  groups_.clear();
  const int ranks = data_->recording->ranks();
  RowGrouping g = grouping_;
  if (g == RowGrouping::kAuto) g = ranks <= 32 ? RowGrouping::kRanks : RowGrouping::kNodes;
  if (g == RowGrouping::kStages && !data_->training()) g = RowGrouping::kNodes;
  if (g == RowGrouping::kRanks) {
    for (int r = 0; r < ranks; ++r)
      groups_.push_back({QStringLiteral("rank %1").arg(r), {r}, true});
  } else if (g == RowGrouping::kStages) {
    std::map<int, Group> stages;  // by pipeline stage, ranks in order
    for (const auto& rank : data_->summary["training"]["ranks"]) {
      const int r = rank["rank"].get<int>(), stage = rank["pp"].get<int>();
      Group& group = stages[stage];
      group.name = QStringLiteral("stage %1").arg(stage);
      group.ranks.push_back(r);
    }
    for (auto& [stage, group] : stages) groups_.push_back(std::move(group));
  } else {
    const Cluster& cluster = data_->scenario->cluster;
    for (size_t n = 0; n < cluster.nodes.size(); ++n) {
      Group group{QString::fromStdString(cluster.nodes[n].name), {}, false};
      group.ranks = cluster.nodes[n].devices;
      if (!group.ranks.empty()) groups_.push_back(std::move(group));
    }
  }
  for (Group& group : groups_) group.expanded = group.expanded || group.ranks.size() < 2;
}

void TimelineView::rebuild_rows() {
  rows_.clear();
  const RunRecording& recording = *data_->recording;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group& group = groups_[g];
    bool first = true;
    // A closed group shows its first recorded rank, or that none of its ranks is.
    std::vector<int> shown = group.ranks;
    if (!group.expanded) {
      const auto recorded = std::find_if(group.ranks.begin(), group.ranks.end(),
                                         [&](int r) { return recording.recorded(r); });
      shown = {recorded != group.ranks.end() ? *recorded : group.ranks.front()};
    }
    for (int rank : shown) {
      if (!recording.recorded(rank)) {
        rows_.push_back({kUnrecorded, static_cast<int>(g), first, rank});
        first = false;
        continue;
      }
      for (size_t row = rank_rows_[static_cast<size_t>(rank)];
           row < rank_rows_[static_cast<size_t>(rank) + 1]; ++row) {
        rows_.push_back({row, static_cast<int>(g), first, rank});
        first = false;
      }
    }
  }
  update_scrollbars();
  viewport()->update();
}

bool TimelineView::group_recorded(int group) const {
  const auto& ranks = groups_[static_cast<size_t>(group)].ranks;
  return std::all_of(ranks.begin(), ranks.end(),
                     [&](int r) { return data_->recording->recorded(r); });
}

void TimelineView::click_group(int group) {
  if (group < 0 || group >= group_count()) return;
  const Group& g = groups_[static_cast<size_t>(group)];
  // A rank's own row is always open, so being open is no reason not to record it.
  const bool closed = !g.expanded || g.ranks.size() < 2;
  if (can_record_ && closed && !group_recorded(group) && g.ranks != recorded_on_request_)
    return emit record_requested(g.ranks);
  toggle_group(group);
}

void TimelineView::expand_ranks(const std::vector<int>& ranks) {
  recorded_on_request_ = ranks;
  for (Group& g : groups_) {
    if (std::any_of(ranks.begin(), ranks.end(), [&](int r) {
          return std::find(g.ranks.begin(), g.ranks.end(), r) != g.ranks.end();
        }))
      g.expanded = true;
  }
  rebuild_rows();
}

void TimelineView::toggle_group(int group) {
  if (group < 0 || group >= group_count() || groups_[static_cast<size_t>(group)].ranks.size() < 2)
    return;
  groups_[static_cast<size_t>(group)].expanded = !groups_[static_cast<size_t>(group)].expanded;
  rebuild_rows();
}

void TimelineView::expand_all(bool expanded) {
  for (Group& g : groups_) g.expanded = expanded || g.ranks.size() < 2;
  rebuild_rows();
}

void TimelineView::show_all() { set_window(0, total_ns_); }

void TimelineView::set_show_critical_path(bool show) {
  show_critical_ = show;
  viewport()->update();
}

size_t TimelineView::critical_in_rows() const {
  size_t n = 0;
  for (const Row& r : all_rows_) n += r.critical.size();
  return n;
}

void TimelineView::set_time_span(double total_ns) {
  total_ns_ = std::max(1.0, total_ns);
  show_all();
}

double TimelineView::window_end() const { return t0_ + window_ns_; }

void TimelineView::set_window(double start_ns, double end_ns) {
  // At most 100 pixels per nanosecond, and never more than the whole span.
  const double min_window = std::min(std::max(1.0, chart_width() * 0.01), total_ns_);
  const double old_window = window_ns_;
  window_ns_ = std::clamp(end_ns - start_ns, min_window, total_ns_);
  const double t0 = std::clamp(start_ns, 0.0, total_ns_ - window_ns_);
  const bool moved = t0 != t0_ || window_ns_ != old_window;
  t0_ = t0;
  update_scrollbars();
  viewport()->update();
  if (moved) emit window_changed(t0_, t0_ + window_ns_);
}

int TimelineView::chart_width() const { return std::max(1, viewport()->width() - kGutter); }
double TimelineView::ns_per_px() const { return window_ns_ / chart_width(); }
double TimelineView::x_of(double t_ns) const { return kGutter + (t_ns - t0_) / ns_per_px(); }
double TimelineView::time_at(double x) const { return t0_ + (x - kGutter) * ns_per_px(); }
int TimelineView::first_row() const { return verticalScrollBar()->value(); }

void TimelineView::update_scrollbars() {
  const int visible_rows = std::max(1, (viewport()->height() - kAxis) / kRowHeight);
  verticalScrollBar()->setRange(0, std::max(0, row_count() - visible_rows));
  verticalScrollBar()->setPageStep(visible_rows);
  QScrollBar* h = horizontalScrollBar();
  const double free = total_ns_ - window_ns_;
  h->blockSignals(true);
  h->setRange(0, free > 0 ? kScrollUnits : 0);
  h->setPageStep(static_cast<int>(kScrollUnits * std::min(1.0, window_ns_ / total_ns_)));
  h->setValue(free > 0 ? static_cast<int>(std::lround(t0_ / free * kScrollUnits)) : 0);
  h->blockSignals(false);
}

void TimelineView::scrollContentsBy(int, int) {
  const double free = total_ns_ - window_ns_;
  if (free > 0) t0_ = free * horizontalScrollBar()->value() / kScrollUnits;
  viewport()->update();
  emit window_changed(t0_, t0_ + window_ns_);
}

void TimelineView::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  update_scrollbars();
}

QString TimelineView::rows_note() const {
  if (!data_) return {};
  const int recorded = data_->recording->recorded_ranks();
  const int ranks = data_->recording->ranks();
  QString note = QStringLiteral("%1 ranks × their streams").arg(ranks);
  if (groups_.size() < static_cast<size_t>(ranks)) {
    note += QStringLiteral(", grouped: click a group's name to show all its ranks");
  }
  if (recorded < ranks) {
    note += QStringLiteral(" (%1 of %2 ranks recorded").arg(recorded).arg(ranks);
    note += can_record_ ? QStringLiteral(": click a group marked \"not recorded\" to run "
                                         "again recording its ranks)")
                        : QStringLiteral(")");
  }
  QString legend;
  for (const auto& [kind, label] :
       {std::pair{TaskKind::kCompute, "compute"}, std::pair{TaskKind::kCollective, "collective"},
        std::pair{TaskKind::kSend, "send/recv"}, std::pair{TaskKind::kMemcpy, "memcpy"}}) {
    legend += QStringLiteral("<span style=\"color:%1\">■</span> %2 &nbsp;")
                  .arg(kind_color(kind).name(), label);
  }
  if (data_->critical_steps > 0) {
    legend +=
        QStringLiteral("<span style=\"color:#d6001c\">□</span> critical path (%1 tasks) &nbsp;")
            .arg(data_->critical_steps);
  }
  return legend + QStringLiteral("<br>") + note.toHtmlEscaped() +
         QStringLiteral(". Wheel: zoom · drag: pan · Home: whole step · hover: details");
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(viewport());
  const int width = viewport()->width();
  const int height = viewport()->height();
  p.fillRect(0, 0, width, height, Qt::white);
  if (!data_) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, QStringLiteral("Run the scenario to see its timeline."));
    return;
  }
  const int first = first_row();
  const int last = std::min(row_count(), first + (height - kAxis) / kRowHeight + 1);
  p.setClipRect(0, kAxis, width, height - kAxis);
  for (int r = first; r < last; ++r) {
    const int y = kAxis + (r - first) * kRowHeight;
    if ((r & 1) == 0) p.fillRect(0, y, width, kRowHeight, QColor(0xf6, 0xf7, 0xf9));
    paint_row(p, rows_[static_cast<size_t>(r)], y);
    if (rows_[static_cast<size_t>(r)].first && r > first) {  // a line above each group
      p.setPen(QColor(0xc8, 0xcc, 0xd2));
      p.drawLine(0, y, width, y);
    }
  }
  p.setClipping(false);
  paint_axis(p, width);
}

void TimelineView::paint_row(QPainter& p, const Shown& shown, int y) {
  const Group& group = groups_[static_cast<size_t>(shown.group)];
  const TaskGraph& graph = data_->lowered.graph;
  // The label: a grouped node's name, with ▸ (click to show all its ranks) or ▾.
  p.setPen(QColor(0x33, 0x33, 0x33));
  QString stream = QStringLiteral("not recorded");
  if (shown.row != kUnrecorded) {
    const uint16_t s = all_rows_[shown.row].stream;
    stream = QString::fromUtf8(graph.streams()[s].data(),
                               static_cast<qsizetype>(graph.streams()[s].size()));
  }
  QString label = QStringLiteral("rank %1 · %2").arg(shown.rank).arg(stream);
  if (group.ranks.size() > 1 && shown.first) {
    label = QStringLiteral("%1 %2 · r%3 · %4")
                .arg(group.expanded ? QStringLiteral("▾") : QStringLiteral("▸"), group.name)
                .arg(shown.rank)
                .arg(stream);
  }
  p.drawText(QRect(4, y, kGutter - 8, kRowHeight), Qt::AlignVCenter | Qt::AlignLeft,
             p.fontMetrics().elidedText(label, Qt::ElideRight, kGutter - 8));
  if (shown.row == kUnrecorded) {
    p.setPen(QColor(0x80, 0x80, 0x80));
    p.drawText(QRect(kGutter + 6, y, chart_width() - 12, kRowHeight),
               Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(
                   can_record_ ? QStringLiteral("not recorded (beyond the recording budget): "
                                                "click the name to record this group")
                               : QStringLiteral("not recorded (beyond the recording budget)"),
                   Qt::ElideRight, chart_width() - 12));
    return;
  }
  const Row& row = all_rows_[shown.row];
  const auto& spans = data_->recording->spans(row.rank);
  p.save();
  p.setClipRect(kGutter, y, chart_width(), kRowHeight);
  const double t1 = window_end();
  const double scale = 1.0 / ns_per_px();
  // Tasks on one stream run one after another, so ends rise with starts: binary search
  // by end finds the first task that reaches into the window.
  auto end_of = [&](uint32_t i) { return static_cast<double>(spans[i].end.count_ns()); };
  auto from = [&](size_t begin, double t) {
    return static_cast<size_t>(
        std::lower_bound(row.spans.begin() + static_cast<std::ptrdiff_t>(begin), row.spans.end(), t,
                         [&](uint32_t i, double v) { return end_of(i) < v; }) -
        row.spans.begin());
  };
  for (size_t i = from(0, t0_); i < row.spans.size();) {
    const Span& s = spans[row.spans[i]];
    const double start = static_cast<double>(s.start.count_ns());
    if (start > t1) break;
    const double x0 = kGutter + (start - t0_) * scale;
    const double x1 = kGutter + (end_of(row.spans[i]) - t0_) * scale;
    const TaskKind kind = graph.task(s.task).kind;
    if (x1 - x0 >= 1.5) {
      const QRectF r(x0, y + 2, x1 - x0, kRowHeight - 4);
      p.fillRect(r, kind_color(kind));
      if (r.width() > 40) {
        p.setPen(Qt::white);
        const std::string_view name = graph.task(s.task).name;
        const QString text = QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
        p.drawText(
            r.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft,
            p.fontMetrics().elidedText(text, Qt::ElideRight, static_cast<int>(r.width()) - 6));
      }
      ++i;
    } else {
      // Narrower than a pixel: one column for everything that ends inside this pixel.
      const double px = std::floor(x0);
      p.fillRect(QRectF(px, y + 2, 1, kRowHeight - 4), kind_color(kind));
      const size_t next = from(i + 1, time_at(px + 1));
      i = std::max(i + 1, next);
    }
  }
  // The critical path on top, outlined in red, however thin its tasks are.
  if (show_critical_ && !row.critical.empty()) {
    const auto first = std::lower_bound(row.critical.begin(), row.critical.end(), t0_,
                                        [&](uint32_t i, double v) { return end_of(i) < v; });
    p.setPen(QPen(QColor(0xd6, 0x00, 0x1c), 2));
    p.setBrush(Qt::NoBrush);
    for (auto it = first; it != row.critical.end(); ++it) {
      const Span& s = spans[*it];
      if (static_cast<double>(s.start.count_ns()) > t1) break;
      const double x0 = kGutter + (static_cast<double>(s.start.count_ns()) - t0_) * scale;
      const double x1 = kGutter + (end_of(*it) - t0_) * scale;
      p.drawRect(QRectF(x0, y + 1, std::max(1.0, x1 - x0), kRowHeight - 2));
    }
  }
  p.restore();
}

void TimelineView::paint_axis(QPainter& p, int width) {
  p.fillRect(0, 0, width, kAxis, QColor(0xee, 0xf0, 0xf3));
  p.setPen(QColor(0x44, 0x44, 0x44));
  p.drawLine(kGutter, kAxis - 1, width, kAxis - 1);
  const double step = tick_step(ns_per_px() * 100);
  const double first = std::ceil(t0_ / step) * step;
  for (double t = first; t <= window_end(); t += step) {
    const int x = static_cast<int>(std::lround(x_of(t)));
    p.drawLine(x, kAxis - 6, x, kAxis - 1);
    p.drawText(QRect(x - 60, 2, 120, kAxis - 8), Qt::AlignCenter, seconds_text(t * 1e-9));
  }
  p.drawText(QRect(4, 2, kGutter - 8, kAxis - 4), Qt::AlignVCenter | Qt::AlignLeft,
             QStringLiteral("%1 shown").arg(seconds_text(window_ns_ * 1e-9)));
}

std::optional<TaskId> TimelineView::task_at(QPoint pos) const {
  const Span* span = span_at(pos);
  return span ? std::optional(span->task) : std::nullopt;
}

const Span* TimelineView::span_at(QPoint pos) const {
  if (!data_ || pos.x() < kGutter || pos.y() < kAxis) return nullptr;
  const int r = first_row() + (pos.y() - kAxis) / kRowHeight;
  if (r < 0 || r >= row_count() || rows_[static_cast<size_t>(r)].row == kUnrecorded)
    return nullptr;
  const Row& row = row_at(r);
  const auto& spans = data_->recording->spans(row.rank);
  const double t = time_at(pos.x());
  const double slack = ns_per_px();  // a pixel either side, so that thin tasks can be hit
  auto it = std::lower_bound(
      row.spans.begin(), row.spans.end(), t - slack,
      [&](uint32_t i, double v) { return static_cast<double>(spans[i].end.count_ns()) < v; });
  if (it == row.spans.end() || static_cast<double>(spans[*it].start.count_ns()) > t + slack)
    return nullptr;
  return &spans[*it];
}

QString TimelineView::describe(const Span& span) const {
  const TaskGraph& graph = data_->lowered.graph;
  const TaskView t = graph.task(span.task);
  const double start = span.start.seconds(), end = span.end.seconds();
  return QStringLiteral("<b>%1</b><br>%2 on rank %3, stream %4<br>%5 → %6 (%7)")
      .arg(QString::fromUtf8(t.name.data(), static_cast<qsizetype>(t.name.size())).toHtmlEscaped(),
           QString::fromUtf8(task_kind_name(t.kind).data()))
      .arg(t.rank)
      .arg(QString::fromUtf8(graph.streams()[t.stream].data(),
                             static_cast<qsizetype>(graph.streams()[t.stream].size())),
           seconds_text(start), seconds_text(end), seconds_text(end - start));
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  if (!data_) return;
  if (event->modifiers() & Qt::ShiftModifier) {  // rows
    verticalScrollBar()->setValue(verticalScrollBar()->value() - event->angleDelta().y() / 40);
    return;
  }
  const double factor = std::pow(1.25, -event->angleDelta().y() / 120.0);
  const double x = event->position().x();
  const double at = time_at(std::max<double>(x, kGutter));
  const double window = window_ns_ * factor;
  const double fraction = (std::max<double>(x, kGutter) - kGutter) / chart_width();
  set_window(at - fraction * window, at - fraction * window + window);
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (data_ && event->button() == Qt::LeftButton && pos.x() < kGutter && pos.y() >= kAxis) {
    const int r = first_row() + (pos.y() - kAxis) / kRowHeight;
    if (r < row_count()) click_group(rows_[static_cast<size_t>(r)].group);
    return;
  }
  if (event->button() == Qt::LeftButton) {
    drag_from_ = event->position().toPoint();
    drag_t0_ = t0_;
    drag_row_ = first_row();
  }
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (drag_from_) {
    const QPoint d = pos - *drag_from_;
    set_window(drag_t0_ - d.x() * ns_per_px(), drag_t0_ - d.x() * ns_per_px() + window_ns_);
    verticalScrollBar()->setValue(drag_row_ - d.y() / kRowHeight);
    return;
  }
  if (const Span* span = span_at(pos)) {
    QToolTip::showText(event->globalPosition().toPoint(), describe(*span), this);
  } else {
    QToolTip::hideText();
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) { drag_from_.reset(); }

void TimelineView::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Home) {
    show_all();
  } else if (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal) {
    set_window(t0_ + window_ns_ / 4, t0_ + window_ns_ * 3 / 4);
  } else if (event->key() == Qt::Key_Minus) {
    set_window(t0_ - window_ns_ / 2, t0_ + window_ns_ * 1.5);
  } else {
    QAbstractScrollArea::keyPressEvent(event);
  }
}

}  // namespace dtsim::gui
