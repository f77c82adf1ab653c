// Reading collective ops, algorithms and options, and checking pairs against the planner.
#include "scenarios/collective_spec.h"

#include <algorithm>
#include <string_view>

#include "sim/collectives/planner.h"

namespace dtsim::scenario_detail {

namespace {

constexpr CollectiveOp kOps[] = {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter,
                                 CollectiveOp::kAllGather, CollectiveOp::kBroadcast,
                                 CollectiveOp::kReduce,    CollectiveOp::kAllToAll,
                                 CollectiveOp::kSendRecv};

std::string algorithm_list(const std::vector<CollectiveAlgorithm>& algorithms) {
  std::string out;
  for (CollectiveAlgorithm a : algorithms) out += (out.empty() ? "" : ", ") + std::string(algorithm_name(a));
  return out;
}

}  // namespace

std::optional<CollectiveOp> read_op(const json& value, const std::string& pointer, Diagnostics& d) {
  std::vector<std::string_view> names;
  for (CollectiveOp op : kOps) names.push_back(collective_op_name(op));
  auto index = read_choice(value, pointer, d, names, "collective op");
  if (!index) return std::nullopt;
  return kOps[*index];
}

std::optional<CollectiveAlgorithm> read_algorithm(const json& value, const std::string& pointer,
                                                  Diagnostics& d) {
  std::vector<std::string_view> names;
  for (CollectiveAlgorithm a : kAllCollectiveAlgorithms) names.push_back(algorithm_name(a));
  auto index = read_choice(value, pointer, d, names, "collective algorithm");
  if (!index) return std::nullopt;
  return kAllCollectiveAlgorithms[*index];
}

bool read_collective_options(JsonObject& o, CollectiveOptions& out) {
  Diagnostics& d = o.diagnostics();
  const size_t errors_before = d.count();
  if (auto v = o.bytes("chunk_bytes", Need::kOptional)) {
    if (v->count() <= 0) {
      d.error(o.pointer("chunk_bytes"), "must be positive (pipelined algorithms split messages "
                                        "into chunks of this size)");
    } else {
      out.chunk_bytes = *v;
    }
  }
  if (const json* dims = o.get("torus_dims", Need::kOptional, "")) {
    const std::string pointer = o.pointer("torus_dims");
    if (!dims->is_array() || dims->size() != 2) {
      d.error(pointer, "expected [X, Y], two integers >= 1, got " + describe(*dims));
    } else {
      auto x = read_integer((*dims)[0], child_pointer(pointer, 0), d, 1, INT32_MAX);
      auto y = read_integer((*dims)[1], child_pointer(pointer, 1), d, 1, INT32_MAX);
      if (x && y) {
        out.torus_x = static_cast<int>(*x);
        out.torus_y = static_cast<int>(*y);
      }
    }
  }
  if (auto v = o.integer("root", Need::kOptional, 0)) out.root = static_cast<int>(*v);
  return d.count() == errors_before;
}

bool check_root(const CollectiveOptions& options, size_t group_size, const std::string& pointer,
                Diagnostics& d) {
  if (static_cast<size_t>(options.root) < group_size) return true;
  d.error(pointer, "root " + std::to_string(options.root) +
                       " is not an index into the group, which has " +
                       std::to_string(group_size) + " member(s) (expected 0.." +
                       std::to_string(group_size - 1) + ")");
  return false;
}

std::string pair_error(CollectiveOp op, CollectiveAlgorithm algorithm, const GroupLayout& layout,
                       const CollectiveOptions& options) {
  const std::string op_name(collective_op_name(op));
  const auto available = algorithms_for(op);
  if (algorithm == CollectiveAlgorithm::kAuto) {
    std::string reasons;
    for (CollectiveAlgorithm a : available) {
      const std::string why = applicability_error(op, a, layout, options);
      if (why.empty()) return "";
      reasons += (reasons.empty() ? "" : "; ") + why;
    }
    return "no algorithm applies to " + op_name + " on this group (auto found: " + reasons + ")";
  }
  if (std::find(available.begin(), available.end(), algorithm) == available.end()) {
    return std::string(algorithm_name(algorithm)) + " does not implement " + op_name +
           " (available: " + algorithm_list(available) + ", or auto)";
  }
  const std::string why = applicability_error(op, algorithm, layout, options);
  if (why.empty()) return "";
  return std::string(algorithm_name(algorithm)) + " does not apply to " + op_name +
         " on this group: " + why;
}

}  // namespace dtsim::scenario_detail
