// Expansion of `--vary key=v1,v2` arguments into the points of a cartesian product.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dtsim {

struct SweepPoint {
  std::vector<std::pair<std::string, std::string>> assignments;  // key, value
  std::string describe() const;
};

// Splits a value list at top-level commas: commas inside [...], {...} or "..." belong to
// the value. Returns the points with the first --vary varying slowest; adds a sentence
// to `errors` for each malformed argument.
std::vector<SweepPoint> expand_sweep_points(const std::vector<std::string>& vary,
                                            std::vector<std::string>& errors);
std::vector<std::string> split_top_level(const std::string& values);

}  // namespace dtsim
