// The `kind: "collective"` workload: an nccl-tests-like sweep over ops, algorithms and
// sizes on one group, and its lowering to a TaskGraph.
#include <algorithm>

#include "scenarios/collective_spec.h"
#include "scenarios/loader.h"
#include "scenarios/workload_loader.h"

namespace dtsim {

namespace scenario_detail {

namespace {

constexpr int64_t kMaxIterations = 1'000'000;

// `sizes` as a list, or as {from, to, factor}: from, from*factor, ... up to `to`.
std::vector<Bytes> read_sizes(const json& value, const std::string& pointer, Diagnostics& d) {
  std::vector<Bytes> sizes;
  if (value.is_array()) {
    const auto* items = read_array(value, pointer, d, "size");
    for (size_t i = 0; items && i < items->size(); ++i) {
      if (auto b = read_bytes((*items)[i], child_pointer(pointer, i), d)) sizes.push_back(*b);
    }
    return sizes;
  }
  if (!value.is_object()) {
    d.error(pointer, "expected an array of sizes or {\"from\": size, \"to\": size, \"factor\": n}, "
                     "got " + describe(value));
    return sizes;
  }
  auto o = JsonObject::open(value, pointer, d);
  const size_t errors_before = d.count();
  const auto from = o->bytes("from", Need::kRequired);
  const auto to = o->bytes("to", Need::kRequired);
  const auto factor = o->integer("factor", Need::kOptional, 2);
  o->report_unknown_keys();
  if (from && from->count() < 1) {
    d.error(o->pointer("from"), "must be at least 1B (the range multiplies it by factor)");
  }
  if (from && to && *to < *from) {
    d.error(o->pointer("to"), "must be >= from (" + std::to_string(from->count()) + " bytes)");
  }
  if (d.count() != errors_before) return sizes;
  const int64_t k = factor.value_or(2);
  for (int64_t s = from->count(); s <= to->count(); s *= k) {
    sizes.push_back(Bytes(s));
    if (s > to->count() / k) break;  // the next size would overflow or pass `to`
  }
  return sizes;
}

}  // namespace

SweepSpec read_sweep(JsonObject& o) {
  Diagnostics& d = o.diagnostics();
  const size_t errors_before = d.count();
  SweepSpec out;
  out.pointer = o.pointer();
  if (const json* ops = o.get("ops", Need::kRequired, "an array of collective ops")) {
    if (const auto* items = read_array(*ops, o.pointer("ops"), d, "collective op")) {
      for (size_t i = 0; i < items->size(); ++i) {
        const std::string pointer = child_pointer(o.pointer("ops"), i);
        if (auto op = read_op((*items)[i], pointer, d)) {
          out.ops.push_back(*op);
          out.op_pointers.push_back(pointer);
        }
      }
    }
  }
  if (const json* algorithms = o.get("algorithms", Need::kOptional, "")) {
    if (const auto* items = read_array(*algorithms, o.pointer("algorithms"), d, "algorithm")) {
      for (size_t i = 0; i < items->size(); ++i) {
        const std::string pointer = child_pointer(o.pointer("algorithms"), i);
        if (auto a = read_algorithm((*items)[i], pointer, d)) {
          out.algorithms.push_back(*a);
          out.algorithm_pointers.push_back(pointer);
        }
      }
    }
  } else {
    out.algorithms.push_back(CollectiveAlgorithm::kAuto);
  }
  if (const json* sizes = o.get("sizes", Need::kRequired, "an array of sizes or {from, to, factor}")) {
    out.sizes = read_sizes(*sizes, o.pointer("sizes"), d);
  }
  if (const json* group = o.get("group", Need::kOptional, "")) {
    out.group = read_rank_set(*group, o.pointer("group"), d);
  }
  if (auto v = o.integer("iterations", Need::kOptional, 1, kMaxIterations)) {
    out.iterations = static_cast<int>(*v);
  }
  read_collective_options(o, out.options);
  out.valid = d.count() == errors_before;
  return out;
}

void resolve_sweep(const SweepSpec& spec, const Cluster& cluster, Diagnostics& d,
                   CollectiveSweep& out) {
  if (spec.group) {
    auto members = resolve_rank_set(*spec.group, cluster.num_ranks(), d);
    if (!members) return;
    out.group = std::move(*members);
  } else {
    out.group = resolve_rank_set(RankSetSpec{}, cluster.num_ranks(), d).value();
  }
  if (!spec.valid) return;
  out.ops = spec.ops;
  out.algorithms = spec.algorithms;
  out.sizes = spec.sizes;
  out.iterations = spec.iterations;
  out.options = spec.options;
  if (!check_root(spec.options, out.group.size(), child_pointer(spec.pointer, "root"), d)) return;

  const GroupLayout layout = group_layout(cluster, out.group);
  for (size_t i = 0; i < spec.ops.size(); ++i) {
    for (size_t j = 0; j < spec.algorithms.size(); ++j) {
      const std::string error = pair_error(spec.ops[i], spec.algorithms[j], layout, spec.options);
      if (error.empty()) continue;
      d.error(spec.algorithm_pointers.empty() ? spec.op_pointers[i] : spec.algorithm_pointers[j],
              error);
    }
  }
  const double tasks = static_cast<double>(out.ops.size()) * static_cast<double>(out.algorithms.size()) *
                       static_cast<double>(out.sizes.size()) * out.iterations *
                       static_cast<double>(out.group.size());
  if (tasks > static_cast<double>(kMaxTasks)) {
    d.error(spec.pointer, "the sweep would create " + std::to_string(static_cast<int64_t>(tasks)) +
                              " tasks (ops x algorithms x sizes x iterations x ranks); at most " +
                              std::to_string(kMaxTasks) + " are supported");
  }
}

}  // namespace scenario_detail

TaskGraph build_collective_sweep_graph(const CollectiveSweep& sweep) {
  TaskGraph graph;
  const uint16_t stream = graph.stream("comm");
  for (CollectiveOp op : sweep.ops) {
    for (CollectiveAlgorithm algorithm : sweep.algorithms) {
      for (Bytes size : sweep.sizes) {
        for (int iteration = 0; iteration < sweep.iterations; ++iteration) {
          CollectiveCall call;
          call.op = op;
          call.algorithm = algorithm;
          call.members = sweep.group;
          call.bytes = size;
          call.options = sweep.options;
          call.label = std::string(collective_op_name(op)) + "/" +
                       std::string(algorithm_name(algorithm)) + "/" +
                       std::to_string(size.count()) + "B#" + std::to_string(iteration);
          // One task per member on its "comm" stream; stream order runs the calls one
          // after another on every rank, so no explicit dependencies are needed.
          graph.add_collective_with_tasks(std::move(call), stream);
        }
      }
    }
  }
  return graph;
}

}  // namespace dtsim
