// Writing a TaskGraph as a lowered-graph file: header, op lists, collective calls, task
// templates, then one line per rank.
#include "reports/lowered_graph_writer.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/op_signature_json.h"

namespace dtsim {

namespace {

using nlohmann::json;

// A rank set as {first, count, stride} when its members are evenly spaced, else a list.
json rank_set(const std::vector<int>& members) {
  if (members.size() >= 2) {
    const int stride = members[1] - members[0];
    bool even = stride > 0;
    for (size_t i = 2; even && i < members.size(); ++i)
      even = members[i] - members[i - 1] == stride;
    if (even) return {{"first", members[0]}, {"count", members.size()}, {"stride", stride}};
  }
  return members;
}

}  // namespace

LoweredGraphStats write_lowered_graph(std::ostream& out, const TaskGraph& g, int ranks) {
  // Each rank's tasks in graph order, and every task's position among its rank's.
  std::vector<std::vector<TaskId>> by_rank(static_cast<size_t>(ranks));
  std::vector<uint32_t> position(g.num_tasks());
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const int r = g.task(id).rank;
    position[id] = static_cast<uint32_t>(by_rank[static_cast<size_t>(r)].size());
    by_rank[static_cast<size_t>(r)].push_back(id);
  }
  // Templates: a rank's tasks without what differs between ranks (peers, calls).
  std::map<std::string, int64_t> template_of;
  std::vector<std::string> templates;
  std::vector<int64_t> rank_template(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    json tasks = json::array();
    for (TaskId id : by_rank[static_cast<size_t>(r)]) {
      const TaskView t = g.task(id);
      json deps = json::array();
      for (TaskId d : t.deps) {
        const int dr = g.task(d).rank;
        if (dr > r) {
          throw std::invalid_argument("task \"" + std::string(t.name) + "\" of rank " +
                                      std::to_string(r) + " depends on a task of rank " +
                                      std::to_string(dr) +
                                      "; a lowered graph lists each rank's dependencies before it");
        }
        if (dr == r) {
          deps.push_back(position[d]);
        } else {
          deps.push_back(json::array({dr, position[d]}));
        }
      }
      const int64_t amount = t.kind == TaskKind::kCompute ? t.duration.count_ns() : t.bytes.count();
      json task = {task_kind_name(t.kind),
                   t.stream,
                   t.name,
                   amount,
                   t.ops == kNoOps ? -1 : static_cast<int64_t>(t.ops),
                   t.tag,
                   deps};
      if (t.kind == TaskKind::kMemcpy) task.push_back(memcpy_kind_name(t.memcpy_kind));
      if (t.kind == TaskKind::kAlloc || t.kind == TaskKind::kFree) {
        task.push_back(memory_category_name(t.memory));
        task.push_back(t.buffer);
      }
      if (const auto moved = g.transfer(id)) {
        task.push_back({pipeline_tensor_name(moved->tensor), moved->micro_batch, moved->chunk});
      }
      tasks.push_back(std::move(task));
    }
    std::string text = tasks.dump();
    auto [it, fresh] = template_of.try_emplace(text, static_cast<int64_t>(templates.size()));
    if (fresh) templates.push_back(std::move(text));
    rank_template[static_cast<size_t>(r)] = it->second;
  }

  json streams = json::array();
  for (const std::string& s : g.streams()) streams.push_back(s);
  out << json{{"format", kLoweredGraphFormat},
              {"version", kLoweredGraphVersion},
              {"ranks", ranks},
              {"tasks", g.num_tasks()},
              {"streams", streams},
              {"op_lists", g.num_op_lists()},
              {"collectives", g.collectives().size()},
              {"templates", templates.size()}}
             .dump()
      << "\n";
  for (OpListId l = 0; l < g.num_op_lists(); ++l) {
    json ops = json::array();
    for (const OpSignature& op : g.op_list(l)) ops.push_back(models::op_signature_to_json(op));
    json line = {{"op_list", l}, {"ops", ops}};
    const auto bound = g.op_operands(l);
    if (std::any_of(bound.begin(), bound.end(), [](const OpOperands& o) { return !o.empty(); })) {
      json operands = json::array();
      for (const OpOperands& o : bound) operands.push_back(models::op_operands_to_json(o));
      line["operands"] = std::move(operands);
    }
    out << line.dump() << "\n";
  }
  for (size_t c = 0; c < g.collectives().size(); ++c) {
    const CollectiveCall& call = g.collectives()[c];
    json line = {{"collective", c},
                 {"op", collective_op_name(call.op)},
                 {"algorithm", algorithm_name(call.algorithm)},
                 {"members", rank_set(call.members)},
                 {"bytes", call.bytes.count()},
                 {"dtype", dtype_name(call.dtype)},
                 {"label", call.label},
                 {"chunk_bytes", call.options.chunk_bytes.count()},
                 {"torus", {call.options.torus_x, call.options.torus_y}},
                 {"root", call.options.root}};
    if (is_reducing(call.op)) line["reduce"] = reduce_op_name(call.reduce);
    if (call.analytical) line["analytical"] = true;
    if (call.calls != 1) line["calls"] = call.calls;
    out << line.dump() << "\n";
  }
  for (size_t t = 0; t < templates.size(); ++t) {
    out << "{\"template\":" << t << ",\"tasks\":" << templates[t] << "}\n";
  }
  for (int r = 0; r < ranks; ++r) {
    json peers = json::array();
    json calls = json::array();
    for (TaskId id : by_rank[static_cast<size_t>(r)]) {
      const TaskView t = g.task(id);
      if (has_peer(t)) peers.push_back(t.peer);
      if (t.kind == TaskKind::kCollective) calls.push_back(t.collective);
    }
    out << json{{"rank", r},
                {"template", rank_template[static_cast<size_t>(r)]},
                {"peers", peers},
                {"calls", calls}}
               .dump()
        << "\n";
  }
  if (!out) throw std::runtime_error("the lowered graph could not be written");
  return LoweredGraphStats{
      static_cast<int64_t>(g.num_tasks()), static_cast<int64_t>(templates.size()),
      static_cast<int64_t>(g.num_op_lists()), static_cast<int64_t>(g.collectives().size())};
}

}  // namespace dtsim
