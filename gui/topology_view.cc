// The topology drawing.
#include "gui/topology_view.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include <QGraphicsEllipseItem>
#include <QGraphicsLineItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QLabel>
#include <QMouseEvent>
#include <QVBoxLayout>
#include <QWheelEvent>

#include "gui/charts.h"
#include "gui/figures.h"
#include "sim/unit_parse.h"

namespace dtsim::gui {
namespace {

constexpr double kDeviceGap = 14;   // scene units between devices of a node
constexpr double kNodeGap = 24;     // extra between nodes
constexpr double kRegionGap = 120;  // extra between regions
constexpr double kTierHeight = 110;
constexpr int kLinkRole = 0;  // QGraphicsItem::data key: the a->b LinkId of a cable

// Green (idle) to yellow to red (saturated).
QColor utilization_color(double u) {
  const double t = std::clamp(u, 0.0, 1.0);
  if (t == 0) return QColor(0xbd, 0xbd, 0xbd);  // idle
  return three_stop_color(QColor(0x1a, 0x96, 0x41), QColor(0xfd, 0xae, 0x61),
                          QColor(0xd7, 0x19, 0x1c), t);
}

QColor vertex_color(VertexKind k) {
  switch (k) {
    case VertexKind::kDevice:
      return QColor(0x4e, 0x79, 0xa7);
    case VertexKind::kHost:
      return QColor(0x76, 0xb7, 0xb2);
    case VertexKind::kNic:
      return QColor(0x9c, 0x75, 0x5f);
    case VertexKind::kSwitch:
      return QColor(0x33, 0x33, 0x33);
    case VertexKind::kGateway:
      return QColor(0xb0, 0x7a, 0xa1);
  }
  return Qt::gray;
}

}  // namespace

// The view: wheel zooms around the pointer, drag pans, a click picks the nearest cable.
class TopologyView::Canvas : public QGraphicsView {
 public:
  Canvas(QGraphicsScene* scene, TopologyView* owner) : QGraphicsView(scene, owner), owner_(owner) {
    setDragMode(QGraphicsView::ScrollHandDrag);
    setRenderHint(QPainter::Antialiasing);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setBackgroundBrush(Qt::white);
  }

 protected:
  void wheelEvent(QWheelEvent* event) override {
    const double f = std::pow(1.2, event->angleDelta().y() / 120.0);
    scale(f, f);
  }
  void mousePressEvent(QMouseEvent* event) override {
    const QPoint p = event->position().toPoint();
    for (QGraphicsItem* item : items(QRect(p - QPoint(5, 5), QSize(11, 11)))) {
      const QVariant link = item->data(kLinkRole);
      if (link.isValid()) {
        owner_->select_link(link.toUInt());
        break;
      }
    }
    QGraphicsView::mousePressEvent(event);
  }

 private:
  TopologyView* owner_;
};

TopologyView::TopologyView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  legend_ = new QLabel(this);
  legend_->setTextFormat(Qt::RichText);
  legend_->setWordWrap(true);
  layout->addWidget(legend_);
  scene_ = new QGraphicsScene(this);
  canvas_ = new Canvas(scene_, this);
  layout->addWidget(canvas_, 1);
  details_ = new QLabel(this);
  details_->setWordWrap(true);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setMinimumHeight(40);
  layout->addWidget(details_);
  clear();
}

void TopologyView::clear() {
  data_.reset();
  drawn_ = false;
  scene_->clear();
  vertices_drawn_ = cables_drawn_ = 0;
  legend_->setText(
      QStringLiteral("Run the scenario to see its topology and how busy each link was."));
  details_->clear();
}

double TopologyView::mean_utilization(const RunData& run, LinkId link) {
  const double step = run.run.result.end.seconds();
  const double bw = run.scenario->cluster.topology.link(link).bandwidth.bytes_per_second();
  if (step <= 0 || bw <= 0 || link >= run.run.links.size()) return 0;
  return run.run.links[link].bytes / (bw * step);
}

void TopologyView::show_run(std::shared_ptr<const RunData> result) {
  clear();
  data_ = std::move(result);
  legend_->setText(QStringLiteral("Drawing…"));
  if (isVisible()) draw();
}

void TopologyView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  draw();
}

void TopologyView::draw() {
  if (!data_ || drawn_) return;
  drawn_ = true;
  const Cluster& cluster = data_->scenario->cluster;
  const Topology& topo = cluster.topology;
  const size_t n = topo.num_vertices();
  // Neighbours, both directions.
  std::vector<std::vector<VertexId>> adj(n);
  for (LinkId l = 0; l < topo.num_links(); ++l) adj[topo.link(l).src].push_back(topo.link(l).dst);
  // Tiers: hops from the nearest device.
  std::vector<int> tier(n, -1);
  std::deque<VertexId> queue;
  for (const ClusterDevice& d : cluster.devices) {
    tier[d.vertex] = 0;
    queue.push_back(d.vertex);
  }
  while (!queue.empty()) {
    const VertexId v = queue.front();
    queue.pop_front();
    for (VertexId w : adj[v]) {
      if (tier[w] < 0) {
        tier[w] = tier[v] + 1;
        queue.push_back(w);
      }
    }
  }
  // x: devices in rank order with gaps between nodes and regions; each vertex above at the
  // mean x of its neighbours one tier down, then spread so that none overlap.
  std::vector<double> x(n, 0);
  double cursor = 0;
  for (size_t r = 0; r < cluster.devices.size(); ++r) {
    const ClusterDevice& d = cluster.devices[r];
    if (r > 0) {
      const ClusterDevice& prev = cluster.devices[r - 1];
      cursor += kDeviceGap + (d.node != prev.node ? kNodeGap : 0) +
                (d.region != prev.region ? kRegionGap : 0);
    }
    x[d.vertex] = cursor;
  }
  const double width = std::max(cursor, 1.0);
  const int top = *std::max_element(tier.begin(), tier.end());
  for (int t = 1; t <= top; ++t) {
    std::vector<VertexId> here;
    for (VertexId v = 0; v < n; ++v) {
      if (tier[v] != t) continue;
      double sum = 0;
      int count = 0;
      for (VertexId w : adj[v]) {
        if (tier[w] == t - 1) {
          sum += x[w];
          ++count;
        }
      }
      x[v] = count ? sum / count : width / 2;
      here.push_back(v);
    }
    std::stable_sort(here.begin(), here.end(), [&](VertexId a, VertexId b) { return x[a] < x[b]; });
    // Keep the order, at least a device gap apart, centred where the neighbours are.
    for (size_t i = 1; i < here.size(); ++i)
      x[here[i]] = std::max(x[here[i]], x[here[i - 1]] + kDeviceGap);
  }
  auto pos = [&](VertexId v) { return QPointF(x[v], -tier[v] * kTierHeight); };
  // Cables: connect() makes a->b and b->a as consecutive ids; draw the pair once, coloured
  // by its busier direction.
  double busiest = 0;
  for (LinkId l = 0; l < topo.num_links(); ++l) {
    const LinkInfo& info = topo.link(l);
    const bool pair = l + 1 < topo.num_links() && topo.link(l + 1).src == info.dst &&
                      topo.link(l + 1).dst == info.src;
    const double u =
        std::max(mean_utilization(*data_, l), pair ? mean_utilization(*data_, l + 1) : 0.0);
    busiest = std::max(busiest, u);
    const double gbps = info.bandwidth.bytes_per_second() * 8 / 1e9;
    QPen pen(utilization_color(u), std::clamp(std::log10(std::max(gbps, 1.0)), 0.6, 4.0));
    pen.setCosmetic(true);
    auto* line = scene_->addLine(QLineF(pos(info.src), pos(info.dst)), pen);
    line->setData(kLinkRole, l);
    line->setZValue(u);  // busy links on top
    line->setToolTip(QString::fromStdString(topo.link_name(l)));
    ++cables_drawn_;
    if (pair) ++l;
  }
  for (VertexId v = 0; v < n; ++v) {
    const VertexInfo& info = topo.vertex(v);
    const QPointF p = pos(v);
    QGraphicsItem* item =
        info.kind == VertexKind::kSwitch || info.kind == VertexKind::kGateway
            ? static_cast<QGraphicsItem*>(scene_->addRect(p.x() - 5, p.y() - 5, 10, 10,
                                                          QPen(Qt::NoPen), vertex_color(info.kind)))
            : scene_->addEllipse(p.x() - 4, p.y() - 4, 8, 8, QPen(Qt::NoPen),
                                 vertex_color(info.kind));
    item->setZValue(10);
    item->setToolTip(QStringLiteral("%1 (%2)").arg(
        QString::fromStdString(info.name), QString::fromUtf8(vertex_kind_name(info.kind).data())));
    ++vertices_drawn_;
  }
  scene_->setSceneRect(scene_->itemsBoundingRect().adjusted(-20, -20, 20, 20));
  canvas_->resetTransform();
  canvas_->fitInView(scene_->sceneRect(), Qt::KeepAspectRatio);
  QString legend;
  for (const auto& [k, label] :
       {std::pair{VertexKind::kDevice, "device"}, std::pair{VertexKind::kHost, "host"},
        std::pair{VertexKind::kNic, "NIC"}, std::pair{VertexKind::kSwitch, "switch"},
        std::pair{VertexKind::kGateway, "region gateway"}}) {
    legend += QStringLiteral("<span style=\"color:%1\">●</span> %2 &nbsp;")
                  .arg(vertex_color(k).name(), label);
  }
  legend += QStringLiteral("&nbsp; links by mean use over the step: ");
  for (double u : {0.0, 0.1, 0.25, 0.5, 0.75, 1.0}) {
    legend += QStringLiteral("<span style=\"color:%1\">━</span> %2% ")
                  .arg(utilization_color(u).name())
                  .arg(u * 100, 0, 'f', 0);
  }
  legend += QStringLiteral(
                "<br>%1 devices, %2 vertices, %3 cables; the busiest link was in use %4 of the "
                "step on average. "
                "Wheel: zoom · drag: pan · click a link for its figures")
                .arg(cluster.num_ranks())
                .arg(vertices_drawn_)
                .arg(cables_drawn_)
                .arg(percent_text(busiest));
  legend_->setText(legend);
}

void TopologyView::select_link(LinkId link) {
  draw();
  if (!data_ || link >= data_->scenario->cluster.topology.num_links()) return;
  const Topology& topo = data_->scenario->cluster.topology;
  const LinkInfo& info = topo.link(link);
  QStringList lines;
  auto describe = [&](LinkId l) {
    const LinkStats& s = data_->run.links.at(l);
    return QStringLiteral("%1: %2 carried, busy %3, mean use %4, peak %5")
        .arg(QString::fromStdString(topo.link_name(l)), bytes_text(s.bytes),
             seconds_text(s.busy.seconds()), percent_text(mean_utilization(*data_, l)),
             percent_text(s.peak_utilization));
  };
  lines << QStringLiteral("<b>%1 link</b>, %2 per direction, latency %3")
               .arg(QString::fromUtf8(link_kind_name(info.kind).data()),
                    QString::fromStdString(format_bandwidth(info.bandwidth)),
                    seconds_text(info.latency.seconds()));
  lines << describe(link).toHtmlEscaped();
  if (link + 1 < topo.num_links() && topo.link(link + 1).src == info.dst &&
      topo.link(link + 1).dst == info.src) {
    lines << describe(link + 1).toHtmlEscaped();
  }
  details_->setText(lines.join("<br>"));
}

QString TopologyView::details() const { return details_->text(); }

}  // namespace dtsim::gui
