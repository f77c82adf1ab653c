// The lowered-graph reader: header, op lists, collective calls, templates, ranks, in that
// order, each line checked before the next is read.
#include "scenarios/lowered_graph_reader.h"

#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/op_signature_json.h"
#include "models/lowered_graph_format.h"
#include "scenarios/json_document.h"

namespace dtsim {

namespace {

using nlohmann::json;

// A problem on the current line; caught once per line and given its number.
struct LineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json& field(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key)) throw LineError(std::string("\"") + key + "\": missing");
  return o.at(key);
}

int64_t integer_value(const json& v, const std::string& what, int64_t min, int64_t max) {
  if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max) {
    throw LineError(what + ": expected an integer in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "], got " + v.dump());
  }
  return v.get<int64_t>();
}

int64_t integer(const json& o, const char* key, int64_t min, int64_t max) {
  return integer_value(field(o, key), std::string("\"") + key + "\"", min, max);
}

std::vector<int> members_of(const json& v, int ranks) {
  std::vector<int> out;
  if (v.is_object()) {
    const int64_t first = integer(v, "first", 0, ranks - 1);
    const int64_t count = integer(v, "count", 1, ranks);
    const int64_t stride = integer(v, "stride", 1, ranks);
    if (first + (count - 1) * stride >= ranks)
      throw LineError("\"members\": the range passes the last rank");
    for (int64_t i = 0; i < count; ++i) out.push_back(static_cast<int>(first + i * stride));
    return out;
  }
  if (!v.is_array())
    throw LineError("\"members\": expected a list of ranks or {first, count, stride}");
  for (const json& r : v)
    out.push_back(static_cast<int>(integer_value(r, "\"members\"", 0, ranks - 1)));
  return out;
}

CollectiveCall call_of(const json& o, int ranks) {
  CollectiveCall c;
  const auto op = collective_op_from_name(field(o, "op").get<std::string>());
  if (!op) throw LineError("\"op\": expected a collective operation (all_reduce, ...)");
  const auto algorithm = algorithm_from_name(field(o, "algorithm").get<std::string>());
  if (!algorithm) throw LineError("\"algorithm\": expected a collective algorithm (ring, ...)");
  c.op = *op;
  c.algorithm = *algorithm;
  c.members = members_of(field(o, "members"), ranks);
  c.bytes = Bytes(integer(o, "bytes", 0, INT64_MAX));
  c.label = field(o, "label").get<std::string>();
  const auto dtype = dtype_from_name(field(o, "dtype").get<std::string>());
  if (!dtype) throw LineError("\"dtype\": expected an element type (bf16, fp32, ...)");
  c.dtype = *dtype;
  if (is_reducing(c.op)) {
    const auto reduce = reduce_op_from_name(field(o, "reduce").get<std::string>());
    if (!reduce) throw LineError("\"reduce\": expected sum, avg, max or min");
    c.reduce = *reduce;
  }
  c.options.chunk_bytes = Bytes(integer(o, "chunk_bytes", 1, INT64_MAX));
  const json& torus = field(o, "torus");
  if (!torus.is_array() || torus.size() != 2) throw LineError("\"torus\": expected [x, y]");
  c.options.torus_x = static_cast<int>(integer_value(torus[0], "\"torus\"[0]", 0, ranks));
  c.options.torus_y = static_cast<int>(integer_value(torus[1], "\"torus\"[1]", 0, ranks));
  c.options.root = static_cast<int>(integer(o, "root", 0, ranks - 1));
  c.analytical = o.contains("analytical") && o.at("analytical").get<bool>();
  if (o.contains("calls")) c.calls = static_cast<int>(integer(o, "calls", 1, INT32_MAX));
  return c;
}


}  // namespace

std::optional<TaskGraph> read_lowered_graph(std::istream& in, int ranks, std::string& error) {
  TaskGraph g;
  std::string text;
  int64_t line = 0;
  std::vector<json> templates;
  std::vector<TaskId> first_of_rank;
  // Every refusal, from our checks, the JSON library or the graph's own: at its line.
  const auto at_line = [&](const std::exception& e) -> std::optional<TaskGraph> {
    error = "line " + std::to_string(line) + ": " + e.what();
    return std::nullopt;
  };
  try {
    const auto next = [&](const char* what) {
      ++line;
      if (!std::getline(in, text)) throw LineError(std::string("the file ends before ") + what);
      std::vector<InputProblem> problems;
      std::optional<json> parsed = parse_json_strictly(text, problems);
      if (!parsed) {
        std::string why = describe_problems(problems, "; ");
        // Each line is a document of its own: its column is what places the problem.
        if (const size_t at = why.find("at line 1, column"); at != std::string::npos)
          why.replace(at, std::string_view("at line 1, column").size(), "at column");
        throw LineError(why);
      }
      return std::move(*parsed);
    };
    const json header = next("its header");
    if (!header.is_object() || header.value("format", "") != kLoweredGraphFormat) {
      throw LineError(std::string("\"format\": expected \"") + kLoweredGraphFormat + "\"");
    }
    if (integer(header, "version", 0, INT32_MAX) != kLoweredGraphVersion) {
      throw LineError("\"version\": this dtsim reads version " +
                      std::to_string(kLoweredGraphVersion));
    }
    if (integer(header, "ranks", 1, INT32_MAX) != ranks) {
      throw LineError("\"ranks\": the graph has " + header.at("ranks").dump() +
                      " ranks, the cluster " + std::to_string(ranks));
    }
    const json& streams = field(header, "streams");
    if (!streams.is_array() || streams.empty() || streams.size() > UINT16_MAX) {
      throw LineError("\"streams\": expected a list of stream names");
    }
    for (const json& s : streams) g.stream(s.get<std::string>());
    const int64_t op_lists = integer(header, "op_lists", 0, UINT32_MAX - 1);
    const int64_t collectives = integer(header, "collectives", 0, UINT32_MAX);
    const int64_t template_count = integer(header, "templates", 1, ranks);
    for (int64_t l = 0; l < op_lists; ++l) {
      const json o = next("its op lists");
      if (integer(o, "op_list", 0, op_lists - 1) != l)
        throw LineError("\"op_list\": expected " + std::to_string(l));
      std::vector<OpSignature> ops;
      for (const json& op : field(o, "ops")) {
        try {
          ops.push_back(models::op_signature_from_json(op));
        } catch (const std::invalid_argument& e) {
          throw LineError(std::string("\"ops\"[") + std::to_string(ops.size()) + "]: " + e.what());
        }
      }
      std::vector<OpOperands> operands;
      if (o.contains("operands")) {
        const json& bound = o.at("operands");
        if (!bound.is_array() || bound.size() != ops.size()) {
          throw LineError("\"operands\": expected one list of bound operands per op (" +
                          std::to_string(ops.size()) + ")");
        }
        for (const json& b : bound) {
          try {
            operands.push_back(models::op_operands_from_json(b));
          } catch (const std::invalid_argument& e) {
            throw LineError(std::string("\"operands\"[") + std::to_string(operands.size()) + "]" +
                            e.what());
          }
        }
      }
      if (g.add_op_list(ops, operands) != static_cast<OpListId>(l))
        throw LineError("the op list repeats an earlier one");
    }
    for (int64_t c = 0; c < collectives; ++c) {
      const json o = next("its collective calls");
      if (integer(o, "collective", 0, collectives - 1) != c) {
        throw LineError("\"collective\": expected " + std::to_string(c));
      }
      g.add_collective(call_of(o, ranks));
    }
    for (int64_t t = 0; t < template_count; ++t) {
      json o = next("its templates");
      if (integer(o, "template", 0, template_count - 1) != t)
        throw LineError("\"template\": expected " + std::to_string(t));
      if (!field(o, "tasks").is_array()) throw LineError("\"tasks\": expected a list of tasks");
      templates.push_back(std::move(o.at("tasks")));
    }
    for (int r = 0; r < ranks; ++r) {
      const json o = next("its ranks");
      if (integer(o, "rank", 0, ranks - 1) != r)
        throw LineError("\"rank\": expected " + std::to_string(r));
      const json& tasks =
          templates[static_cast<size_t>(integer(o, "template", 0, template_count - 1))];
      const json& peers = field(o, "peers");
      const json& calls = field(o, "calls");
      size_t next_peer = 0, next_call = 0;
      const TaskId first = static_cast<TaskId>(g.num_tasks());
      first_of_rank.push_back(first);
      // Ranks of one template are stored once (TaskGraph::begin_rank).
      g.begin_rank(r);
      for (size_t i = 0; i < tasks.size(); ++i) {
        const json& a = tasks[i];
        const std::string where = "task " + std::to_string(i) + " of its template";
        if (!a.is_array() || a.size() < 7)
          throw LineError(where + ": expected [kind, stream, name, amount, ops, tag, deps]");
        Task t;
        const auto kind = task_kind_from_name(a[0].get<std::string>());
        if (!kind) throw LineError(where + ": unknown task kind " + a[0].dump());
        t.kind = *kind;
        t.rank = r;
        t.stream = static_cast<uint16_t>(
            integer_value(a[1], where + " stream", 0, static_cast<int64_t>(streams.size()) - 1));
        t.name = a[2].get<std::string>();
        const int64_t amount = integer_value(a[3], where + " duration or bytes", 0, INT64_MAX);
        if (t.kind == TaskKind::kCompute) {
          t.duration = Duration::ns(amount);
        } else {
          t.bytes = Bytes(amount);
        }
        const int64_t ops = integer_value(a[4], where + " op list", -1, op_lists - 1);
        t.ops = ops < 0 ? kNoOps : static_cast<OpListId>(ops);
        t.tag = static_cast<uint32_t>(integer_value(a[5], where + " tag", 0, UINT32_MAX));
        for (const json& d : a[6]) {
          if (d.is_array()) {
            const int64_t dr = integer_value(d.at(0), where + " dependency's rank", 0, r - 1);
            const TaskId base = first_of_rank[static_cast<size_t>(dr)];
            const TaskId end = first_of_rank[static_cast<size_t>(dr) + 1];
            t.deps.push_back(base + static_cast<TaskId>(integer_value(
                                        d.at(1), where + " dependency", 0, end - base - 1)));
          } else {
            t.deps.push_back(first +
                             static_cast<TaskId>(integer_value(d, where + " dependency", 0,
                                                               static_cast<int64_t>(i) - 1)));
          }
        }
        if (t.kind == TaskKind::kMemcpy) {
          const auto mk =
              a.size() > 7 ? memcpy_kind_from_name(a[7].get<std::string>()) : std::nullopt;
          if (!mk) throw LineError(where + ": a memcpy needs its direction (h2d, d2h, d2d, peer)");
          t.memcpy_kind = *mk;
        }
        if (t.kind == TaskKind::kAlloc || t.kind == TaskKind::kFree) {
          const auto category = a.size() > 8 && a[7].is_string()
                                    ? memory_category_from_name(a[7].get<std::string>())
                                    : std::nullopt;
          if (!category) {
            throw LineError(where + ": an alloc or free needs its memory category and buffer");
          }
          t.memory = *category;
          t.buffer = static_cast<uint32_t>(integer_value(a[8], where + " buffer", 0, UINT32_MAX));
        }
        if ((t.kind == TaskKind::kSend || t.kind == TaskKind::kRecv) && a.size() > 7) {
          const json& moved = a[7];
          const auto tensor = moved.is_array() && moved.size() == 3 && moved[0].is_string()
                                  ? pipeline_tensor_from_name(moved[0].get<std::string>())
                                  : std::nullopt;
          if (!tensor) {
            throw LineError(where +
                            ": a pipeline transfer is [\"activations\" or "
                            "\"activation_gradients\", micro-batch, chunk]");
          }
          t.transfer = PipelineTransfer{
              *tensor,
              static_cast<uint32_t>(integer_value(moved[1], where + " micro-batch", 0, UINT32_MAX)),
              static_cast<uint32_t>(integer_value(moved[2], where + " chunk", 0, UINT32_MAX))};
        }
        if (has_peer(t)) {
          if (next_peer >= peers.size())
            throw LineError("\"peers\": fewer than the template's transfers");
          t.peer = static_cast<int>(integer_value(peers[next_peer++], "\"peers\"", 0, ranks - 1));
        }
        if (t.kind == TaskKind::kCollective) {
          if (next_call >= calls.size())
            throw LineError("\"calls\": fewer than the template's collectives");
          t.collective = static_cast<uint32_t>(
              integer_value(calls[next_call++], "\"calls\"", 0, collectives - 1));
        }
        g.add(t);
      }
      g.end_rank();
      if (next_peer != peers.size())
        throw LineError("\"peers\": more than the template's transfers");
      if (next_call != calls.size())
        throw LineError("\"calls\": more than the template's collectives");
    }
    if (std::getline(in, text) && !text.empty()) {
      ++line;
      throw LineError("more lines than the header announces");
    }
  } catch (const json::exception& e) {
    return at_line(e);
  } catch (const LineError& e) {
    return at_line(e);
  } catch (const std::invalid_argument& e) {
    // The graph's own checks (TaskGraph::add): an op list on a task that runs no kernels, a
    // pipeline transfer on a task that is not a send or recv.
    return at_line(e);
  } catch (const std::length_error& e) {
    return at_line(e);
  }
  return g;
}

}  // namespace dtsim
