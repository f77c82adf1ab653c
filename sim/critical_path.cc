// Walking a run back from its last task.
#include "sim/critical_path.h"

#include <algorithm>
#include <utility>

#include "sim/check.h"

namespace dtsim {

std::string_view critical_link_name(CriticalLink l) {
  switch (l) {
    case CriticalLink::kFirst:
      return "first";
    case CriticalLink::kDependency:
      return "dependency";
    case CriticalLink::kStream:
      return "stream";
    case CriticalLink::kCollective:
      return "collective";
    case CriticalLink::kMessage:
      return "message";
  }
  return "?";
}

namespace {

constexpr TaskId kNone = ~TaskId{0};

// What each task could have waited for besides its dependencies: the task before it on
// its (rank, stream), a collective's other members, a send's receive and a receive's send
// (TaskGraph::message_pairs: the pairing the runtime runs).
struct Predecessors {
  std::vector<TaskId> on_stream;
  std::vector<TaskId> peer_task;             // a send's receive, a receive's send
  std::vector<std::vector<TaskId>> members;  // per collective call, its tasks

  explicit Predecessors(const TaskGraph& graph)
      : on_stream(graph.num_tasks(), kNone),
        peer_task(graph.num_tasks(), kNone),
        members(graph.collectives().size()) {
    // The last task seen on each (rank, stream), indexed rank by rank.
    const size_t streams = std::max<size_t>(1, graph.streams().size());
    std::vector<TaskId> last;
    TaskId id = 0;
    for (const TaskView t : graph.tasks()) {
      DTSIM_CHECK(t.rank >= 0 && t.stream < streams, "the critical path of a graph not validated");
      const size_t at = static_cast<size_t>(t.rank) * streams + t.stream;
      if (at >= last.size()) last.resize(at + 1, kNone);
      on_stream[id] = std::exchange(last[at], id);
      if (t.kind == TaskKind::kCollective && t.collective < members.size())
        members[t.collective].push_back(id);
      ++id;
    }
    for (const TaskGraph::MessagePair& p : graph.message_pairs()) {
      peer_task[p.recv] = p.send;
      peer_task[p.send] = p.recv;
    }
  }
};

}  // namespace

std::vector<CriticalStep> critical_path(const TaskGraph& graph, const TaskTimes& times) {
  TaskId cur = kNone;
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    if (times.ran[id] && (cur == kNone || times.end[id] > times.end[cur])) cur = id;
  }
  if (cur == kNone) return {};
  const Predecessors pred(graph);
  // The latest-finishing of a task's own predecessors (dependencies and stream order), and
  // how it is linked; kNone when it has none that ran.
  auto latest_own = [&](TaskId id, CriticalLink& link) {
    TaskId best = kNone;
    auto consider = [&](TaskId p, CriticalLink l) {
      if (p == kNone || !times.ran[p] || times.end[p] > times.end[id]) return;
      if (best == kNone || times.end[p] > times.end[best]) {
        best = p;
        link = l;
      }
    };
    for (TaskId d : graph.task(id).deps) consider(d, CriticalLink::kDependency);
    consider(pred.on_stream[id], CriticalLink::kStream);
    return best;
  };
  // Walking back, each step records how it follows the task found before it in time.
  std::vector<CriticalStep> path;
  std::vector<bool> seen(graph.num_tasks(), false);
  while (cur != kNone && !seen[cur]) {
    seen[cur] = true;
    const TaskView t = graph.task(cur);
    // A collective starts when its last member is ready: the path goes through that member
    // (the one whose own predecessor finished last; this task on a tie).
    if (t.kind == TaskKind::kCollective && t.collective < pred.members.size()) {
      auto ready = [&](TaskId m) {
        CriticalLink unused = CriticalLink::kFirst;
        const TaskId p = latest_own(m, unused);
        return p == kNone ? Time() : times.end[p];
      };
      TaskId last = cur;
      Time last_ready = ready(cur);
      for (TaskId m : pred.members[t.collective]) {
        if (m == cur || !times.ran[m] || seen[m]) continue;
        const Time r = ready(m);
        if (r > last_ready) {
          last = m;
          last_ready = r;
        }
      }
      if (last != cur) {
        path.push_back({cur, CriticalLink::kCollective});
        cur = last;
        seen[cur] = true;
      }
    }
    // A send and its receive meet before the message moves: the path goes through the one
    // posted last (a late receiver keeps it on its own rank).
    if (t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv) {
      const TaskId peer = pred.peer_task[cur];
      if (peer != kNone && times.ran[peer] && !seen[peer] && times.start[peer] > times.start[cur]) {
        path.push_back({cur, CriticalLink::kMessage});
        cur = peer;
        seen[cur] = true;
      }
    }
    CriticalLink link = CriticalLink::kFirst;
    const TaskId next = latest_own(cur, link);
    path.push_back({cur, next == kNone ? CriticalLink::kFirst : link});
    cur = next;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace dtsim
