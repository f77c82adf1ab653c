// Reading the `kind: "task_graph"` workload: collective definitions and task entries, with
// the checks that need no cluster (ids, deps, kind-specific keys, units).
#include <map>
#include <string_view>

#include "scenarios/collective_spec.h"
#include "scenarios/workload_loader.h"

namespace dtsim::scenario_detail {

namespace {

constexpr MemcpyKind kMemcpyKinds[] = {MemcpyKind::kHostToDevice, MemcpyKind::kDeviceToHost,
                                       MemcpyKind::kDeviceToDevice, MemcpyKind::kPeer};

constexpr unsigned bit(TaskKind k) { return 1u << static_cast<unsigned>(k); }

// Keys that mean something for some task kinds only.
struct KindKey {
  std::string_view key;
  unsigned kinds;
  std::string_view kinds_text;
};
constexpr KindKey kKindKeys[] = {
    {"duration", bit(TaskKind::kCompute), "compute"},
    {"flops", bit(TaskKind::kCompute), "compute"},
    {"dtype", bit(TaskKind::kCompute), "compute"},
    {"collective", bit(TaskKind::kCollective), "collective"},
    {"peer", bit(TaskKind::kSend) | bit(TaskKind::kRecv) | bit(TaskKind::kMemcpy),
     "send, recv and memcpy"},
    {"tag", bit(TaskKind::kSend) | bit(TaskKind::kRecv), "send and recv"},
    {"moves", bit(TaskKind::kSend) | bit(TaskKind::kRecv), "send and recv"},
    {"direction", bit(TaskKind::kMemcpy), "memcpy"},
    {"buffer", bit(TaskKind::kAlloc) | bit(TaskKind::kFree), "alloc and free"},
    {"category", bit(TaskKind::kAlloc) | bit(TaskKind::kFree), "alloc and free"},
    {"bytes",
     bit(TaskKind::kSend) | bit(TaskKind::kRecv) | bit(TaskKind::kMemcpy) | bit(TaskKind::kAlloc) |
         bit(TaskKind::kFree),
     "send, recv, memcpy, alloc and free"},
};

CollectiveDef read_collective_def(const json& value, const std::string& pointer,
                                  std::map<std::string, size_t>& names, size_t index,
                                  Diagnostics& d) {
  CollectiveDef out;
  out.pointer = pointer;
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return out;
  const size_t errors_before = d.count();
  if (auto name = o->string("name", Need::kRequired, "a unique collective name")) {
    if (name->empty()) {
      d.error(o->pointer("name"), "a collective name may not be empty");
    } else if (auto [it, inserted] = names.emplace(*name, index); !inserted) {
      d.error(o->pointer("name"), "duplicate collective name " + in_quotes(*name) + " (also at " +
                                      sibling_pointer(pointer, it->second) + "/name)");
    } else {
      out.name = *name;
    }
  }
  if (const json* op = o->get("op", Need::kRequired, "a collective op")) {
    if (auto v = read_op(*op, o->pointer("op"), d)) out.op = *v;
  }
  if (const json* algorithm = o->get("algorithm", Need::kOptional, "")) {
    out.algorithm_given = true;
    if (auto v = read_algorithm(*algorithm, o->pointer("algorithm"), d)) out.algorithm = *v;
  }
  if (const json* group = o->get("group", Need::kOptional, "")) {
    out.group = read_rank_set(*group, o->pointer("group"), d);
  }
  if (auto v = o->bytes("bytes", Need::kRequired)) out.bytes = *v;
  if (auto v = o->choice("dtype", Need::kOptional, names_of(kAllDTypes, dtype_name), "dtype")) {
    out.dtype = kAllDTypes[*v];
  }
  if (o->value().contains("reduce") && !is_reducing(out.op)) {
    o->reject("reduce", "applies only to a reducing op (all_reduce, reduce_scatter, reduce)");
  } else if (auto v = o->choice("reduce", Need::kOptional, names_of(kAllReduceOps, reduce_op_name),
                                "reduction")) {
    out.reduce = kAllReduceOps[*v];
  }
  read_collective_options(*o, out.options);
  o->report_unknown_keys();
  out.valid = d.count() == errors_before;
  return out;
}

// What read_task needs to know about the whole graph.
struct GraphNames {
  std::map<std::string, size_t> task_ids;  // first entry with each id
  bool task_ids_complete = true;           // every entry has a readable id
  std::map<std::string, size_t> collectives;
  bool collectives_complete = true;
};

void read_deps(JsonObject& o, size_t index, const GraphNames& names, TaskSpec& out) {
  Diagnostics& d = o.diagnostics();
  const json* deps = o.get("deps", Need::kOptional, "");
  if (deps == nullptr) return;
  const std::string pointer = o.pointer("deps");
  if (!deps->is_array()) {
    d.error(pointer, "expected an array of task ids, got " + describe(*deps));
    return;
  }
  std::vector<std::string_view> earlier;
  for (const auto& [id, at] : names.task_ids) {
    if (at < index) earlier.push_back(id);
  }
  for (size_t j = 0; j < deps->size(); ++j) {
    const std::string dep_pointer = child_pointer(pointer, j);
    auto id = read_string((*deps)[j], dep_pointer, d);
    if (!id) continue;
    const auto it = names.task_ids.find(*id);
    if (it == names.task_ids.end()) {
      if (!names.task_ids_complete) continue;  // it may be the entry whose id was unreadable
      const std::string guess = closest_match(*id, earlier);
      d.error(dep_pointer, "unknown task id " + in_quotes(*id) +
                               (guess.empty() ? "" : " (did you mean " + in_quotes(guess) + "?)"));
    } else if (it->second == index) {
      d.error(dep_pointer, "a task cannot depend on itself");
    } else if (it->second > index) {
      d.error(dep_pointer, "task " + in_quotes(*id) + " is defined later (at " +
                               sibling_pointer(o.pointer(), it->second) +
                               "); deps must name tasks listed earlier");
    } else {
      out.deps.push_back(TaskDep{it->second, dep_pointer});
    }
  }
}

void read_compute(JsonObject& o, TaskSpec& out) {
  Diagnostics& d = o.diagnostics();
  const bool has_duration = o.has("duration");
  const bool has_flops = o.has("flops");
  if (has_duration && has_flops) {
    d.error(o.pointer(), "give either \"duration\" or \"flops\", not both");
  } else if (!has_duration && !has_flops) {
    d.error(o.pointer(),
            "a compute task needs \"duration\" (a fixed time) or \"flops\" (priced "
            "by the cost model as a GEMM in \"dtype\")");
  }
  if (auto v = o.duration("duration", Need::kOptional)) out.prototype.duration = *v;
  if (auto v = o.flops("flops", Need::kOptional)) out.flops = *v;
  if (!has_duration) {
    out.dtype_given = o.value().contains("dtype");
    if (auto v = o.choice("dtype", Need::kOptional, names_of(kAllDTypes, dtype_name), "dtype")) {
      out.dtype = kAllDTypes[*v];
    }
  } else {
    o.reject("dtype", "applies only with \"flops\"");
  }
}

// A send's or recv's "moves": {"tensor", "micro_batch", "chunk"}.
std::optional<PipelineTransfer> read_transfer(const json& value, const std::string& pointer,
                                              Diagnostics& d) {
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return std::nullopt;
  constexpr PipelineTensor kTensors[] = {PipelineTensor::kActivations,
                                         PipelineTensor::kActivationGradients};
  const auto tensor_names = names_of(kTensors, pipeline_tensor_name);
  const auto tensor = o->choice("tensor", Need::kRequired, tensor_names, "pipeline tensor");
  const auto micro_batch = o->integer("micro_batch", Need::kRequired, 0, UINT32_MAX);
  const auto chunk = o->integer("chunk", Need::kRequired, 0, UINT32_MAX);
  o->report_unknown_keys();
  if (!tensor || !micro_batch || !chunk) return std::nullopt;
  return PipelineTransfer{kTensors[*tensor], static_cast<uint32_t>(*micro_batch),
                          static_cast<uint32_t>(*chunk)};
}

TaskSpec read_task(const json& value, const std::string& pointer, size_t index,
                   const GraphNames& names, Diagnostics& d) {
  TaskSpec out;
  out.pointer = pointer;
  auto o = JsonObject::open(value, pointer, d);
  if (!o) return out;
  const size_t errors_before = d.count();
  if (auto id = o->string("id", Need::kRequired, "a unique task id")) {
    const auto it = names.task_ids.find(*id);
    if (id->empty()) {
      d.error(o->pointer("id"), "a task id may not be empty");
    } else if (it != names.task_ids.end() && it->second != index) {
      d.error(o->pointer("id"), "duplicate task id " + in_quotes(*id) + " (also at " +
                                    sibling_pointer(pointer, it->second) +
                                    ")");
    }
    out.id = *id;
  }
  const bool has_rank = o->has("rank");
  const bool has_ranks = o->has("ranks");
  if (has_rank && has_ranks) {
    d.error(pointer, "give either \"rank\" (one rank) or \"ranks\" (a set), not both");
  } else if (has_rank) {
    out.ranks_pointer = o->pointer("rank");
    if (auto r = read_single_rank(*o->get("rank", Need::kOptional, ""), out.ranks_pointer, d)) out.ranks = *r;
  } else if (has_ranks) {
    out.ranks_pointer = o->pointer("ranks");
    if (auto r = read_rank_set(*o->get("ranks", Need::kOptional, ""), out.ranks_pointer, d)) out.ranks = *r;
  } else {
    d.error(pointer, "missing required key \"rank\" or \"ranks\" (expected a rank, \"all\", an "
                     "array of ranks or {\"first\", \"count\", \"stride\"})");
  }
  const auto kind_names = names_of(kAllTaskKinds, task_kind_name);
  const auto kind_index = o->choice("kind", Need::kRequired, kind_names, "task kind");
  if (auto stream = o->string("stream", Need::kOptional)) {
    if (stream->empty()) d.error(o->pointer("stream"), "a stream name may not be empty");
    out.stream = *stream;
  }
  read_deps(*o, index, names, out);

  if (!kind_index) {
    for (const KindKey& k : kKindKeys) o->accept({k.key});
    o->report_unknown_keys();
    return out;
  }
  const TaskKind kind = kAllTaskKinds[*kind_index];
  out.prototype.kind = kind;
  for (const KindKey& k : kKindKeys) {
    if ((k.kinds & bit(kind)) == 0) {
      o->reject(k.key, "applies only to " + std::string(k.kinds_text) + " tasks, not " +
                           std::string(task_kind_name(kind)));
    }
  }
  switch (kind) {
    case TaskKind::kCompute:
      read_compute(*o, out);
      break;
    case TaskKind::kCollective:
      if (auto name = o->string("collective", Need::kRequired, "a workload.collectives name")) {
        if (auto it = names.collectives.find(*name); it != names.collectives.end()) {
          out.collective = it->second;
        } else if (names.collectives_complete) {
          std::vector<std::string_view> known;
          for (const auto& [n, i] : names.collectives) known.push_back(n);
          d.error(o->pointer("collective"),
                  "unknown collective " + in_quotes(*name) + " (expected a workload.collectives name" +
                      (known.empty() ? ": none are defined" : ": " + join_names(known)) + ")");
        }
      }
      break;
    case TaskKind::kSend:
    case TaskKind::kRecv:
      if (auto v = o->integer("peer", Need::kRequired, 0)) out.prototype.peer = static_cast<int>(*v);
      if (auto v = o->bytes("bytes", Need::kRequired)) out.prototype.bytes = *v;
      if (auto v = o->integer("tag", Need::kOptional, 0)) out.prototype.tag = static_cast<uint32_t>(*v);
      if (const json* moves = o->get("moves", Need::kOptional, "")) {
        out.prototype.transfer = read_transfer(*moves, o->pointer("moves"), d);
      }
      break;
    case TaskKind::kMemcpy: {
      const auto directions = names_of(kMemcpyKinds, memcpy_kind_name);
      const auto direction = o->choice("direction", Need::kRequired, directions, "memcpy direction");
      if (direction) out.prototype.memcpy_kind = kMemcpyKinds[*direction];
      if (auto v = o->bytes("bytes", Need::kRequired)) out.prototype.bytes = *v;
      if (direction && out.prototype.memcpy_kind == MemcpyKind::kPeer) {
        if (auto v = o->integer("peer", Need::kRequired, 0)) out.prototype.peer = static_cast<int>(*v);
      } else if (direction) {
        o->reject("peer", "applies only with direction \"peer\"");
      }
      break;
    }
    case TaskKind::kAlloc:
    case TaskKind::kFree: {
      if (auto v = o->bytes("bytes", Need::kRequired)) out.prototype.bytes = *v;
      if (auto v = o->integer("buffer", Need::kOptional, 1, UINT32_MAX)) {
        out.prototype.buffer = static_cast<uint32_t>(*v);
      }
      const auto categories = names_of(kAllMemoryCategories, memory_category_name);
      if (auto v = o->choice("category", Need::kOptional, categories, "memory category")) {
        out.prototype.memory = kAllMemoryCategories[*v];
      }
      break;
    }
  }
  if (out.stream.empty()) {
    const bool on_compute = kind == TaskKind::kCompute ||
                            (kind == TaskKind::kMemcpy &&
                             out.prototype.memcpy_kind == MemcpyKind::kDeviceToDevice);
    out.stream = on_compute ? "compute" : "comm";
  }
  o->report_unknown_keys();
  out.valid = d.count() == errors_before;
  return out;
}

// The path of a lowered-graph file at `key`, with its pointer for later errors.
void read_graph_path(JsonObject& o, const char* key, std::optional<std::string>& path,
                     std::string& pointer) {
  pointer = o.pointer(key);
  if (auto v = o.string(key, Need::kRequired)) {
    if (v->empty()) {
      o.diagnostics().error(pointer,
                            "expected the path of a lowered-graph file, got an empty string");
    } else {
      path = *v;
    }
  }
}

}  // namespace

TaskGraphSpec read_task_graph(JsonObject& o) {
  Diagnostics& d = o.diagnostics();
  TaskGraphSpec out;
  // A lowered graph (`dtsim lower`) in its own file, in place of tasks and collectives.
  if (o.has("graph_file")) {
    read_graph_path(o, "graph_file", out.graph_file, out.graph_file_pointer);
    if (auto v = o.boolean("reprice", Need::kOptional)) out.reprice = *v;
    const bool has_local = o.has("local_graph_file");
    if (has_local) {
      read_graph_path(o, "local_graph_file", out.local_graph_file, out.local_graph_file_pointer);
    }
    if (has_local || o.has("sync_every")) {
      // Both or neither: a local step without its period (or a period without a local
      // step) cannot be weighed.
      if (auto v = o.integer("sync_every", Need::kRequired, 2))
        out.sync_every = static_cast<int>(*v);
      if (!has_local) {
        d.error(o.pointer("local_graph_file"),
                "missing: \"sync_every\" weighs a local SGD step, which this key names (the "
                "lowered-graph file of the step that reduces inside each region)");
      }
    }
    o.reject("tasks", "a task graph gives \"tasks\" or \"graph_file\", not both");
    o.reject("collectives", "a lowered graph's file holds its collectives");
    return out;
  }
  o.reject("reprice", "applies only with \"graph_file\"");
  o.reject("local_graph_file", "applies only with \"graph_file\"");
  o.reject("sync_every", "applies only with \"graph_file\" and \"local_graph_file\"");
  GraphNames names;
  if (const json* collectives = o.get("collectives", Need::kOptional, "")) {
    const std::string pointer = o.pointer("collectives");
    if (!collectives->is_array()) {
      d.error(pointer, "expected an array of collectives, got " + describe(*collectives));
      names.collectives_complete = false;
    } else {
      for (size_t i = 0; i < collectives->size(); ++i) {
        out.collectives.push_back(
            read_collective_def((*collectives)[i], child_pointer(pointer, i), names.collectives, i, d));
        names.collectives_complete = names.collectives_complete && !out.collectives.back().name.empty();
      }
    }
  }
  out.tasks_pointer = o.pointer("tasks");
  const json* tasks = o.get("tasks", Need::kRequired, "an array of tasks");
  if (tasks == nullptr) return out;
  const std::string& pointer = out.tasks_pointer;
  const auto* items = read_array(*tasks, pointer, d, "task");
  if (items == nullptr) return out;
  // Ids first, so that a dep naming a later task says so rather than "unknown".
  for (size_t i = 0; i < items->size(); ++i) {
    const json& t = (*items)[i];
    if (t.is_object() && t.contains("id") && t["id"].is_string()) {
      names.task_ids.emplace(t["id"].get<std::string>(), i);
    } else {
      names.task_ids_complete = false;
    }
  }
  for (size_t i = 0; i < items->size(); ++i) {
    out.tasks.push_back(read_task((*items)[i], child_pointer(pointer, i), i, names, d));
  }
  return out;
}

}  // namespace dtsim::scenario_detail
