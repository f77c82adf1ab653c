// Sets of ranks as a scenario writes them ("all", [0, 2, 5], {"first", "count", "stride"}),
// read before the cluster's size is known and resolved against it afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/json_reader.h"

namespace dtsim::scenario_detail {

struct RankSetSpec {
  enum class Kind { kAll, kList, kRange };
  Kind kind = Kind::kAll;
  std::vector<int64_t> list;  // kList, in the order written
  int64_t first = 0;          // kRange
  int64_t count = 0;
  int64_t stride = 1;
  bool single = false;  // written as one integer (a task's "rank"), not as a list
  std::string pointer;  // where it was written, for errors found when resolving
};

// nullopt after reporting when `value` is none of the three forms.
std::optional<RankSetSpec> read_rank_set(const json& value, const std::string& pointer,
                                         Diagnostics& d);
// A single rank written as an integer (a task's "rank").
std::optional<RankSetSpec> read_single_rank(const json& value, const std::string& pointer,
                                            Diagnostics& d);

// The ranks in order; nullopt after reporting ranks outside 0..num_ranks-1 or repeated.
std::optional<std::vector<int>> resolve_rank_set(const RankSetSpec& spec, int num_ranks,
                                                 Diagnostics& d);

// "0..7" or "0, 2, 5" (shortened) for messages.
std::string describe_ranks(const std::vector<int>& ranks);

}  // namespace dtsim::scenario_detail
