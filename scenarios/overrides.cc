// Command-line overrides ("--set a.b.c=VALUE") applied to a scenario document before it is
// validated, so that overridden values get exactly the same checks as written ones.
#include <charconv>
#include <string>
#include <vector>

#include "scenarios/json_reader.h"
#include "scenarios/loader.h"

namespace dtsim {

namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    segments.push_back(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return segments;
    start = dot + 1;
  }
}

std::string type_phrase(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "a " + std::string(v.type_name());
  }
}

}  // namespace

std::string apply_override(nlohmann::json& document, std::string_view assignment) {
  const size_t eq = assignment.find('=');
  const std::string shown = scenario_detail::in_quotes(assignment);
  if (eq == std::string_view::npos || eq == 0) {
    return "expected a.b.c=VALUE (a dotted path, \"=\", then the value), got " + shown;
  }
  const std::string_view path = assignment.substr(0, eq);
  const std::string_view text = assignment.substr(eq + 1);
  const auto segments = split_path(path);
  for (std::string_view segment : segments) {
    if (segment.empty()) {
      return "expected a.b.c=VALUE, but the path \"" + std::string(path) + "\" has an empty segment";
    }
  }
  // A value that is not JSON ("400Gbps", "ring") is meant as a string.
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) value = std::string(text);

  nlohmann::json* node = &document;
  std::string walked;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string segment(segments[i]);
    const bool last = i + 1 == segments.size();
    if (node->is_null()) *node = nlohmann::json::object();
    if (node->is_object()) {
      if (last) {
        (*node)[segment] = std::move(value);
        return "";
      }
      node = &(*node)[segment];
    } else if (node->is_array()) {
      const std::string where = walked.empty() ? "the document" : walked;
      size_t index = 0;
      const auto [end, ec] = std::from_chars(segment.data(), segment.data() + segment.size(), index);
      if (ec != std::errc() || end != segment.data() + segment.size()) {
        return "\"" + segment + "\" is not an index into the array " + where + " (expected 0.." +
               std::to_string(node->size()) + ")";
      }
      if (index > node->size()) {
        return "index " + segment + " is out of range for the array " + where + ", which has " +
               std::to_string(node->size()) + " element(s) (" + std::to_string(node->size()) +
               " appends one)";
      }
      if (index == node->size()) node->push_back(nullptr);
      if (last) {
        (*node)[index] = std::move(value);
        return "";
      }
      node = &(*node)[index];
    } else {
      return (walked.empty() ? "the document" : walked) + " is " + type_phrase(*node) +
             ", not an object or array, so it has no \"" + segment + "\" to set";
    }
    walked += (walked.empty() ? "" : ".") + segment;
  }
  return "";
}

}  // namespace dtsim
