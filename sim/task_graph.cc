// TaskGraph construction and structural validation.
#include "sim/task_graph.h"

#include <algorithm>
#include <unordered_map>
#include <tuple>

namespace dtsim {

std::string_view task_kind_name(TaskKind k) {
  switch (k) {
    case TaskKind::kCompute: return "compute";
    case TaskKind::kCollective: return "collective";
    case TaskKind::kSend: return "send";
    case TaskKind::kRecv: return "recv";
    case TaskKind::kMemcpy: return "memcpy";
    case TaskKind::kAlloc: return "alloc";
    case TaskKind::kFree: return "free";
  }
  return "?";
}

std::string_view memcpy_kind_name(MemcpyKind k) {
  switch (k) {
    case MemcpyKind::kHostToDevice: return "h2d";
    case MemcpyKind::kDeviceToHost: return "d2h";
    case MemcpyKind::kDeviceToDevice: return "d2d";
    case MemcpyKind::kPeer: return "peer";
  }
  return "?";
}

std::optional<MemcpyKind> memcpy_kind_from_name(std::string_view name) {
  for (MemcpyKind k : {MemcpyKind::kHostToDevice, MemcpyKind::kDeviceToHost,
                       MemcpyKind::kDeviceToDevice, MemcpyKind::kPeer}) {
    if (memcpy_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

uint16_t TaskGraph::stream(std::string_view name) {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i] == name) return static_cast<uint16_t>(i);
  }
  streams_.emplace_back(name);
  return static_cast<uint16_t>(streams_.size() - 1);
}

TaskId TaskGraph::add(Task task) {
  tasks_.push_back(std::move(task));
  return static_cast<TaskId>(tasks_.size() - 1);
}

uint32_t TaskGraph::add_collective(CollectiveCall call) {
  collectives_.push_back(std::move(call));
  return static_cast<uint32_t>(collectives_.size() - 1);
}

uint32_t TaskGraph::add_collective_with_tasks(CollectiveCall call, uint16_t stream) {
  const uint32_t id = add_collective(std::move(call));
  const CollectiveCall& added = collectives_[id];
  for (int rank : added.members) {
    Task task;
    task.kind = TaskKind::kCollective;
    task.rank = rank;
    task.stream = stream;
    task.name = added.label;
    task.collective = id;
    add(std::move(task));
  }
  return id;
}

std::vector<std::string> TaskGraph::validate(int num_ranks) const {
  std::vector<std::string> errors;
  auto where = [&](size_t i) {
    return "task " + std::to_string(i) + " (\"" + tasks_[i].name + "\", rank " +
           std::to_string(tasks_[i].rank) + ")";
  };
  std::vector<std::vector<int>> collective_ranks(collectives_.size());
  // (sender, receiver, tag) -> sends minus receives. Hashed: a training step has millions
  // of messages; the few unmatched keys are sorted below for a stable report.
  struct P2pKeyHash {
    size_t operator()(const std::tuple<int, int, uint32_t>& k) const {
      const uint64_t h = (static_cast<uint64_t>(static_cast<uint32_t>(std::get<0>(k))) << 32) ^
                         static_cast<uint32_t>(std::get<1>(k)) ^
                         static_cast<uint64_t>(std::get<2>(k)) * 0x9e3779b97f4a7c15ULL;
      return static_cast<size_t>((h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL);
    }
  };
  std::unordered_map<std::tuple<int, int, uint32_t>, int, P2pKeyHash> p2p_balance;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    if (t.rank < 0 || t.rank >= num_ranks) {
      errors.push_back(where(i) + ": rank is outside 0.." + std::to_string(num_ranks - 1));
    }
    if (t.stream >= streams_.size()) {
      errors.push_back(where(i) + ": stream " + std::to_string(t.stream) +
                       " was never declared (use TaskGraph::stream)");
    }
    for (TaskId d : t.deps) {
      // Dependencies point backwards, so the graph is acyclic by construction.
      if (d >= i) errors.push_back(where(i) + ": depends on task " + std::to_string(d) +
                                   ", which is not an earlier task");
    }
    const bool needs_peer = t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv ||
                            (t.kind == TaskKind::kMemcpy && t.memcpy_kind == MemcpyKind::kPeer);
    if (needs_peer && (t.peer < 0 || t.peer >= num_ranks || t.peer == t.rank)) {
      errors.push_back(where(i) + ": peer " + std::to_string(t.peer) +
                       " is not another rank in 0.." + std::to_string(num_ranks - 1));
    }
    if (t.kind == TaskKind::kSend) ++p2p_balance[{t.rank, t.peer, t.tag}];
    if (t.kind == TaskKind::kRecv) --p2p_balance[{t.peer, t.rank, t.tag}];
    if (t.kind == TaskKind::kCollective) {
      if (t.collective >= collectives_.size()) {
        errors.push_back(where(i) + ": refers to collective " + std::to_string(t.collective) +
                         ", which does not exist");
      } else {
        collective_ranks[t.collective].push_back(t.rank);
      }
    }
  }
  std::vector<std::pair<std::tuple<int, int, uint32_t>, int>> unmatched;
  for (const auto& entry : p2p_balance) {
    if (entry.second != 0) unmatched.push_back(entry);
  }
  std::sort(unmatched.begin(), unmatched.end());
  for (const auto& [key, balance] : unmatched) {
    const auto& [from, to, tag] = key;
    errors.push_back("send/recv from rank " + std::to_string(from) + " to rank " +
                     std::to_string(to) + " with tag " + std::to_string(tag) + ": " +
                     std::to_string(std::abs(balance)) +
                     (balance > 0 ? " send(s) without a matching recv"
                                  : " recv(s) without a matching send"));
  }
  for (size_t c = 0; c < collectives_.size(); ++c) {
    auto have = collective_ranks[c];
    auto want = collectives_[c].members;
    std::sort(have.begin(), have.end());
    std::sort(want.begin(), want.end());
    if (have != want) {
      errors.push_back("collective " + std::to_string(c) + " (\"" + collectives_[c].label +
                       "\"): its tasks are on " + std::to_string(have.size()) +
                       " rank(s) but it has " + std::to_string(want.size()) +
                       " member(s); every member needs exactly one task");
    }
  }
  return errors;
}

}  // namespace dtsim
