// Reading and resolving rank sets: "all", explicit lists and strided ranges.
#include "scenarios/rank_set.h"

#include <map>

#include "scenarios/cluster_loader.h"

namespace dtsim::scenario_detail {

namespace {

std::string range_text(int num_ranks) {
  return num_ranks == 1 ? "the cluster has 1 rank: 0"
                        : "the cluster has " + std::to_string(num_ranks) + " ranks: 0.." +
                              std::to_string(num_ranks - 1);
}

}  // namespace

std::optional<RankSetSpec> read_rank_set(const json& value, const std::string& pointer,
                                         Diagnostics& d) {
  RankSetSpec out;
  out.pointer = pointer;
  if (value.is_string() && value.get_ref<const std::string&>() == "all") return out;
  if (value.is_array()) {
    out.kind = RankSetSpec::Kind::kList;
    if (value.empty()) {
      d.error(pointer, "must not be empty (expected at least one rank)");
      return std::nullopt;
    }
    bool ok = true;
    for (size_t i = 0; i < value.size(); ++i) {
      auto rank = read_integer(value[i], child_pointer(pointer, i), d, 0, kMaxRanks);
      ok = ok && rank.has_value();
      if (rank) out.list.push_back(*rank);
    }
    if (!ok) return std::nullopt;
    return out;
  }
  if (value.is_object()) {
    auto o = JsonObject::open(value, pointer, d);
    const size_t errors_before = d.count();
    out.kind = RankSetSpec::Kind::kRange;
    if (auto v = o->integer("first", Need::kOptional, 0, kMaxRanks)) out.first = *v;
    if (auto v = o->integer("count", Need::kRequired, 1, kMaxRanks)) out.count = *v;
    if (auto v = o->integer("stride", Need::kOptional, 1, kMaxRanks)) out.stride = *v;
    o->report_unknown_keys();
    if (d.count() != errors_before) return std::nullopt;
    return out;
  }
  d.error(pointer, "expected \"all\", an array of ranks or {\"first\": r, \"count\": n, "
                   "\"stride\": s}, got " + describe(value));
  return std::nullopt;
}

std::optional<RankSetSpec> read_single_rank(const json& value, const std::string& pointer,
                                            Diagnostics& d) {
  auto rank = read_integer(value, pointer, d, 0, kMaxRanks);
  if (!rank) return std::nullopt;
  RankSetSpec out;
  out.kind = RankSetSpec::Kind::kList;
  out.list.push_back(*rank);
  out.single = true;
  out.pointer = pointer;
  return out;
}

std::optional<std::vector<int>> resolve_rank_set(const RankSetSpec& spec, int num_ranks,
                                                 Diagnostics& d) {
  std::vector<int> ranks;
  switch (spec.kind) {
    case RankSetSpec::Kind::kAll:
      for (int r = 0; r < num_ranks; ++r) ranks.push_back(r);
      return ranks;
    case RankSetSpec::Kind::kRange: {
      // Each term is below 2^20, so the last rank fits comfortably in 64 bits.
      const int64_t last = spec.first + (spec.count - 1) * spec.stride;
      if (last >= num_ranks) {
        d.error(spec.pointer, "the range (first " + std::to_string(spec.first) + ", count " +
                                  std::to_string(spec.count) + ", stride " +
                                  std::to_string(spec.stride) + ") reaches rank " +
                                  std::to_string(last) + ", but " + range_text(num_ranks));
        return std::nullopt;
      }
      for (int64_t i = 0; i < spec.count; ++i) ranks.push_back(static_cast<int>(spec.first + i * spec.stride));
      return ranks;
    }
    case RankSetSpec::Kind::kList: {
      bool ok = true;
      std::map<int64_t, size_t> seen;
      for (size_t i = 0; i < spec.list.size(); ++i) {
        const int64_t r = spec.list[i];
        const std::string where = spec.single ? spec.pointer : child_pointer(spec.pointer, i);
        if (r >= num_ranks) {
          d.error(where, "rank " + std::to_string(r) + " is out of range (" + range_text(num_ranks) + ")");
          ok = false;
        } else if (auto [it, inserted] = seen.emplace(r, i); !inserted) {
          d.error(where, "duplicate rank " + std::to_string(r) + " (also at " +
                             child_pointer(spec.pointer, it->second) + ")");
          ok = false;
        } else {
          ranks.push_back(static_cast<int>(r));
        }
      }
      if (!ok) return std::nullopt;
      return ranks;
    }
  }
  return std::nullopt;
}

std::string describe_ranks(const std::vector<int>& ranks) {
  bool contiguous = ranks.size() > 2;
  for (size_t i = 1; i < ranks.size() && contiguous; ++i) contiguous = ranks[i] == ranks[i - 1] + 1;
  if (contiguous) return std::to_string(ranks.front()) + ".." + std::to_string(ranks.back());
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 8) return out + ", ... (" + std::to_string(ranks.size()) + " ranks)";
    out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  }
  return out;
}

}  // namespace dtsim::scenario_detail
