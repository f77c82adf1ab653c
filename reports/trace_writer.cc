// Trace Event Format writer; streams events so that large traces need no JSON DOM.
#include "reports/trace_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "reports/collective_bandwidth.h"
#include "sim/unit_parse.h"

namespace dtsim {
namespace {

std::string quoted(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

// Exact microseconds from integer nanoseconds.
std::string micros(Duration d) {
  const int64_t ns = d.count_ns();
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) {}
  void raw(const std::string& event) {
    out_ << (first_ ? "\n" : ",\n") << event;
    first_ = false;
  }
  void name_process(int pid, std::string_view name, int sort) {
    raw(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", pid,
                    quoted(name)));
    raw(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})",
                    pid, sort));
  }
  void name_thread(int pid, int64_t tid, std::string_view name) {
    raw(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                    pid, tid, quoted(name)));
  }
  // A counter track of the process (Perfetto draws it as a graph over time).
  void counter(int pid, std::string_view name, Time at, const std::string& args) {
    raw(fmt::format(R"({{"ph":"C","name":{},"pid":{},"ts":{},"args":{}}})", quoted(name), pid,
                    micros(at), args));
  }
  void span(int pid, int64_t tid, std::string_view name, std::string_view cat, Time start, Time end,
            const std::string& args) {
    raw(fmt::format(R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{}}})",
                    quoted(name), quoted(cat), pid, tid, micros(start), micros(end - start), args));
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

}  // namespace

TraceWriter::TraceWriter(const LoweredScenario& scenario, int ranks) : ranks_(ranks) {
  const Cluster& c = scenario.cluster_ref();
  if (ranks >= c.num_ranks()) return;
  std::vector<bool> node_traced(c.nodes.size(), false);
  for (int r = 0; r < ranks; ++r) node_traced[c.devices[r].node] = true;
  const Topology& t = c.topology;
  traced_links_.assign(t.num_links(), false);
  for (LinkId l = 0; l < t.num_links(); ++l) {
    for (VertexId v : {t.link(l).src, t.link(l).dst}) {
      const int node = t.vertex(v).node;
      if (node >= 0 && node_traced[node]) traced_links_[l] = true;
    }
  }
  const auto& calls = scenario.graph.collectives();
  traced_collectives_.assign(calls.size(), false);
  for (size_t i = 0; i < calls.size(); ++i) {
    for (int m : calls[i].members) {
      if (m < ranks) traced_collectives_[i] = true;
    }
  }
}

void TraceWriter::write(std::ostream& out, const LoweredScenario& scenario) const {
  const Cluster& c = scenario.cluster_ref();
  const int ranks = c.num_ranks();
  const int collectives_pid = ranks;
  const int links_pid = ranks + 1;
  out << R"({"displayTimeUnit":"ns","otherData":{"scenario":)" << quoted(scenario.name)
      << R"(},"traceEvents":[)";
  EventStream ev(out);

  // Name only the rank/stream tracks that carry tasks, in rank order.
  std::set<std::pair<int, int>> rank_streams;
  for (const TaskRecord& t : tasks_) {
    const auto& streams = scenario.graph.streams();
    const int s = static_cast<int>(std::find(streams.begin(), streams.end(), t.stream) - streams.begin());
    rank_streams.emplace(t.rank, s);
  }
  int last_rank = -1;
  for (const auto& [rank, stream] : rank_streams) {
    if (rank != last_rank) {
      const ClusterDevice& d = c.devices[rank];
      ev.name_process(rank, fmt::format("rank {} ({})", rank, c.topology.vertex(d.vertex).name), rank);
      last_rank = rank;
    }
    ev.name_thread(rank, stream, scenario.graph.streams()[stream]);
  }
  // Memory in use per rank, from the alloc and free tasks in the order they finished (the
  // simulation's order): a counter track under each rank.
  std::map<int, int64_t> in_use;
  for (const TaskRecord& t : tasks_) {
    const auto& streams = scenario.graph.streams();
    const auto tid = std::find(streams.begin(), streams.end(), t.stream) - streams.begin();
    if (t.kind != TaskKind::kAlloc && t.kind != TaskKind::kFree) {
      ev.span(t.rank, tid, t.name, task_kind_name(t.kind), t.start, t.end,
              fmt::format(R"({{"task":{}}})", t.task));
      continue;
    }
    const int64_t bytes = scenario.graph.task(t.task).bytes.count();
    int64_t& used = in_use[t.rank];
    used += t.kind == TaskKind::kAlloc ? bytes : -bytes;
    ev.span(t.rank, tid, t.name, task_kind_name(t.kind), t.start, t.end,
            fmt::format(R"({{"task":{},"bytes":{}}})", t.task, bytes));
    ev.counter(t.rank, "memory", t.end,
               fmt::format(R"({{"GiB":{:.6f}}})", static_cast<double>(used) / (1 << 30)));
  }

  if (!collectives_.empty()) {
    ev.name_process(collectives_pid, "collectives", ranks);
    ev.name_thread(collectives_pid, 0, "calls");
    for (const CollectiveRecord& r : collectives_) {
      const double algbw = algorithm_bandwidth_GBps(r.bytes, r.end - r.start);
      ev.span(collectives_pid, 0, r.label, collective_op_name(r.op), r.start, r.end,
              fmt::format(R"({{"algorithm":{},"bytes":{},"ranks":{},"steps":{},"busbw_GBps":{:.3f}}})",
                          quoted(algorithm_name(r.algorithm)), r.bytes.count(), r.ranks, r.steps,
                          algbw * bus_bandwidth_factor(r.op, r.ranks)));
    }
  }

  if (!links_.empty()) {
    ev.name_process(links_pid, "links", ranks + 1);
    std::set<LinkId> named;
    links_.for_each([&](const LinkBusyRecord& r) { named.insert(r.link); });
    for (LinkId l : named) ev.name_thread(links_pid, l, c.topology.link_name(l));
    links_.for_each([&](const LinkBusyRecord& r) {
      const double seconds = (r.end - r.start).seconds();
      const double util = seconds > 0
          ? r.bytes / (c.topology.link(r.link).bandwidth.bytes_per_second() * seconds) : 0;
      ev.span(links_pid, r.link, "busy", "link", r.start, r.end,
              fmt::format(R"({{"bytes":{:.0f},"rounds":{},"utilization":{:.4f}}})", r.bytes,
                          r.rounds, util));
    });
  }
  out << "\n]}\n";
}

}  // namespace dtsim
