// Resolving the `kind: "task_graph"` workload against the built cluster: ranks, peers,
// collective groups, dtypes, replicated dependencies and send/recv matching; then the
// TaskGraph itself.
#include <algorithm>
#include <map>
#include <tuple>

#include <sstream>

#include "models/cost_model.h"
#include "scenarios/collective_spec.h"
#include "scenarios/json_document.h"
#include "scenarios/lowered_graph_reader.h"
#include "scenarios/workload_loader.h"

namespace dtsim::scenario_detail {

namespace {

// A task entry's copies: which rank holds which position, for replicated dependencies.
struct Copies {
  std::vector<int> ranks;                     // in the order written
  std::vector<std::pair<int, size_t>> index;  // (rank, position), sorted by rank

  std::optional<size_t> position_of(int rank) const {
    auto it = std::lower_bound(index.begin(), index.end(), std::pair<int, size_t>{rank, 0});
    if (it == index.end() || it->first != rank) return std::nullopt;
    return it->second;
  }
};

Copies make_copies(std::vector<int> ranks) {
  Copies c;
  c.ranks = std::move(ranks);
  for (size_t i = 0; i < c.ranks.size(); ++i) c.index.emplace_back(c.ranks[i], i);
  std::sort(c.index.begin(), c.index.end());
  return c;
}

std::string peer_pointer(const TaskSpec& t) { return child_pointer(t.pointer, "peer"); }

// Checks that need the task's ranks; false after reporting.
bool check_task(const TaskSpec& t, const Copies& copies, const Cluster& cluster,
                const TaskGraphSpec& spec,
                const std::vector<std::optional<std::vector<int>>>& groups, Diagnostics& d) {
  const int n = cluster.num_ranks();
  const Task& p = t.prototype;
  if (has_peer(p)) {
    if (p.peer >= n) {
      d.error(peer_pointer(t), "rank " + std::to_string(p.peer) + " is out of range (the cluster has " +
                                   std::to_string(n) + " ranks: 0.." + std::to_string(n - 1) + ")");
      return false;
    }
    if (copies.position_of(p.peer)) {
      d.error(peer_pointer(t), "peer " + std::to_string(p.peer) +
                                   " is one of the task's own ranks; a transfer needs another rank");
      return false;
    }
  }
  if (p.kind == TaskKind::kCollective && t.collective) {
    const CollectiveDef& def = spec.collectives[*t.collective];
    const auto& group = groups[*t.collective];
    if (!group) return false;  // the definition's own error is reported
    std::vector<int> have = copies.ranks;
    std::vector<int> want = *group;
    std::sort(have.begin(), have.end());
    std::sort(want.begin(), want.end());
    if (have != want) {
      d.error(t.ranks_pointer, "the task runs on ranks " + describe_ranks(copies.ranks) +
                                   ", but collective \"" + def.name + "\" has group " +
                                   describe_ranks(*group) +
                                   "; a collective task's ranks must be exactly its collective's group");
      return false;
    }
  }
  if (p.kind == TaskKind::kCompute && t.flops) {
    for (int r : copies.ranks) {
      const DeviceSpec& device = *cluster.devices[static_cast<size_t>(r)].spec;
      // The math that can carry the dtype (bf16 on a V100 runs at its fp32 rate).
      try {
        (void)models::gemm_math_dtype(t.dtype, device);
      } catch (const std::invalid_argument&) {
        d.error(child_pointer(t.pointer, t.dtype_given ? "dtype" : "flops"),
                "rank " + std::to_string(r) + "'s device \"" + device.name + "\" has no " +
                    std::string(dtype_name(t.dtype)) +
                    " peak FLOP rate nor one of a dtype that can carry it (give a dtype it "
                    "supports, or a duration)");
        return false;
      }
    }
  }
  return true;
}

// Every (sender, receiver, tag) needs as many recvs as sends; reports the first entry
// whose transfer has no partner.
void check_send_recv(const TaskGraphSpec& spec, const std::vector<std::optional<Copies>>& copies,
                     Diagnostics& d) {
  using Key = std::tuple<int, int, uint32_t>;
  std::map<Key, std::pair<std::vector<size_t>, std::vector<size_t>>> transfers;  // sends, recvs
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskSpec& t = spec.tasks[i];
    const TaskKind kind = t.prototype.kind;
    if (kind != TaskKind::kSend && kind != TaskKind::kRecv) continue;
    if (!t.valid || !copies[i]) return;  // with unknown endpoints any report could be wrong
    for (int r : copies[i]->ranks) {
      if (kind == TaskKind::kSend) {
        transfers[{r, t.prototype.peer, t.prototype.tag}].first.push_back(i);
      } else {
        transfers[{t.prototype.peer, r, t.prototype.tag}].second.push_back(i);
      }
    }
  }
  for (const auto& [key, lists] : transfers) {
    const auto& [sends, recvs] = lists;
    if (sends.size() == recvs.size()) continue;
    const auto& [from, to, tag] = key;
    const bool more_sends = sends.size() > recvs.size();
    const size_t unmatched = more_sends ? sends[recvs.size()] : recvs[sends.size()];
    d.error(spec.tasks[unmatched].pointer,
            std::string(more_sends ? "send" : "recv") + " from rank " + std::to_string(from) +
                " to rank " + std::to_string(to) + " with tag " + std::to_string(tag) +
                " has no matching " + (more_sends ? "recv" : "send") + " (" +
                std::to_string(sends.size()) + " send(s), " + std::to_string(recvs.size()) +
                " recv(s))");
  }
}

}  // namespace

std::optional<TaskGraph> read_graph_file(const std::string& path, const std::string& pointer,
                                         const Cluster& cluster, Diagnostics& d) {
  const int n = cluster.num_ranks();
  // Read whole and bounded: a pipe or a device names no size to check before reading.
  std::string error;
  std::optional<std::string> text = read_input_file(path, error);
  if (!text) {
    d.error(pointer, path + ": " + error);
    return std::nullopt;
  }
  std::istringstream in(std::move(*text));
  auto graph = read_lowered_graph(in, n, error);
  if (!graph) {
    d.error(pointer, path + ": " + error);
    return std::nullopt;
  }
  const std::vector<std::string> problems = graph->validate(n);
  for (const std::string& problem : problems) d.error(pointer, path + ": " + problem);
  if (!problems.empty()) return std::nullopt;
  return graph;
}

void resolve_task_graph(const TaskGraphSpec& spec, const Cluster& cluster, Diagnostics& d,
                        TaskGraph& out) {
  const int n = cluster.num_ranks();
  if (spec.graph_file) {
    if (auto graph = read_graph_file(*spec.graph_file, spec.graph_file_pointer, cluster, d)) {
      out = std::move(*graph);
    }
    return;
  }
  const size_t errors_before = d.count();
  std::vector<std::optional<std::vector<int>>> groups(spec.collectives.size());
  for (size_t i = 0; i < spec.collectives.size(); ++i) {
    const CollectiveDef& def = spec.collectives[i];
    if (!def.valid) continue;
    auto members = resolve_rank_set(def.group.value_or(RankSetSpec{}), n, d);
    if (!members) continue;
    if (!check_root(def.options, members->size(), child_pointer(def.pointer, "root"), d)) continue;
    const std::string error =
        pair_error(def.op, def.algorithm, group_layout(cluster, *members), def.options);
    if (!error.empty()) {
      d.error(child_pointer(def.pointer, def.algorithm_given ? "algorithm" : "op"), error);
      continue;
    }
    groups[i] = std::move(members);
  }

  std::vector<std::optional<Copies>> copies(spec.tasks.size());
  int64_t total = 0;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskSpec& t = spec.tasks[i];
    if (!t.valid) continue;
    auto ranks = resolve_rank_set(t.ranks, n, d);
    if (!ranks) continue;
    Copies c = make_copies(std::move(*ranks));
    total += static_cast<int64_t>(c.ranks.size());
    if (check_task(t, c, cluster, spec, groups, d)) copies[i] = std::move(c);
  }
  if (total > kMaxTasks) {
    d.error(spec.tasks_pointer, "the tasks replicate to " + std::to_string(total) + " tasks; at most " +
                std::to_string(kMaxTasks) + " are supported");
  }

  // A dependency on a replicated entry means its copy on the same rank; an entry with a
  // single copy is depended on from every rank.
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    if (!copies[i]) continue;
    for (const TaskDep& dep : spec.tasks[i].deps) {
      const auto& target = copies[dep.task];
      if (!target || target->ranks.size() == 1) continue;
      for (int r : copies[i]->ranks) {
        if (target->position_of(r)) continue;
        d.error(dep.pointer, "task \"" + spec.tasks[dep.task].id + "\" runs on ranks " +
                                 describe_ranks(target->ranks) + " but not on rank " +
                                 std::to_string(r) + ", where this task also runs (a dependency "
                                                     "on a replicated task means its copy on the same rank)");
        break;
      }
    }
  }
  check_send_recv(spec, copies, d);
  if (d.count() != errors_before) return;
  for (const auto& c : copies) {
    if (!c) return;  // an entry with errors reported while reading
  }

  std::vector<TaskId> first_id(spec.tasks.size());
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskSpec& t = spec.tasks[i];
    first_id[i] = static_cast<TaskId>(out.tasks().size());
    const uint16_t stream = out.stream(t.stream);
    uint32_t call = 0;
    OpListId ops = kNoOps;
    if (t.flops) {
      OpSignature gemm;
      gemm.name = t.id;
      gemm.kind = KernelKind::kGemm;
      gemm.storage = storage_dtype(t.dtype);
      gemm.math = t.dtype;
      gemm.flops = t.flops->count();
      ops = out.add_op_list(std::span<const OpSignature>(&gemm, 1));
    }
    if (t.collective) {
      // Each task entry that names a collective is one call of it.
      const CollectiveDef& def = spec.collectives[*t.collective];
      CollectiveCall c;
      c.op = def.op;
      c.algorithm = def.algorithm;
      c.members = *groups[*t.collective];
      c.bytes = def.bytes;
      c.options = def.options;
      c.dtype = def.dtype;
      c.reduce = def.reduce;
      c.label = def.name;
      call = out.add_collective(std::move(c));
    }
    for (int r : copies[i]->ranks) {
      Task task = t.prototype;
      task.rank = r;
      task.stream = stream;
      task.name = t.id;
      task.collective = call;
      task.ops = ops;
      for (const TaskDep& dep : t.deps) {
        const Copies& target = *copies[dep.task];
        const size_t position = target.position_of(r).value_or(0);
        task.deps.push_back(first_id[dep.task] + static_cast<TaskId>(position));
      }
      out.add(std::move(task));
    }
  }
  for (const std::string& problem : out.validate(n)) {
    d.error(spec.tasks_pointer, problem);
  }
}

}  // namespace dtsim::scenario_detail
