// Sweep point expansion.
#include "runner/sweep_points.h"

#include <algorithm>

namespace dtsim {

std::string SweepPoint::describe() const {
  std::string s;
  for (const auto& [k, v] : assignments) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

std::vector<std::string> split_top_level(const std::string& values) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const char c = values[i];
    if (in_string) {
      if (c == '\\' && i + 1 < values.size()) {
        current += c;
        current += values[++i];
        continue;
      }
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  out.push_back(current);
  return out;
}

std::vector<SweepPoint> expand_sweep_points(const std::vector<std::string>& vary,
                                            std::vector<std::string>& errors) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const std::string& arg : vary) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      errors.push_back("\"" + arg + "\": expected key=v1,v2,...");
      continue;
    }
    auto values = split_top_level(arg.substr(eq + 1));
    bool empty_value = false;
    for (const auto& v : values) empty_value |= v.empty();
    if (empty_value) {
      errors.push_back("\"" + arg + "\": empty value in the list");
      continue;
    }
    const std::string key = arg.substr(0, eq);
    if (std::any_of(axes.begin(), axes.end(),
                    [&](const auto& axis) { return axis.first == key; })) {
      errors.push_back("\"" + key + "\" is varied twice; give all its values in one --vary");
      continue;
    }
    axes.emplace_back(key, std::move(values));
  }
  if (!errors.empty() || axes.empty()) return {};
  std::vector<SweepPoint> points(1);
  for (const auto& [key, values] : axes) {
    std::vector<SweepPoint> next;
    for (const SweepPoint& p : points) {
      for (const std::string& v : values) {
        SweepPoint q = p;
        q.assignments.emplace_back(key, v);
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  return points;
}

}  // namespace dtsim
