// A small typed reader over nlohmann::json for the scenario loader: every read knows its
// JSON pointer, problems are collected (never thrown) and keys nobody asked for are reported.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/input_error.h"
#include "sim/units.h"

namespace dtsim::scenario_detail {

using nlohmann::json;

// One problem: where (an RFC 6901 JSON pointer, "" for the root) and what is wrong.
using Diagnostic = InputProblem;

class Diagnostics {
 public:
  void error(std::string_view pointer, std::string message);
  size_t count() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const std::vector<Diagnostic>& items() const { return items_; }

 private:
  std::vector<Diagnostic> items_;
};

// RFC 6901: "~" is written "~0" and "/" is written "~1" inside a reference token.
std::string child_pointer(std::string_view parent, std::string_view key);
std::string child_pointer(std::string_view parent, size_t index);
// The pointer to element `index` of the array that holds `pointer`'s element.
std::string sibling_pointer(std::string_view pointer, size_t index);

// "\"text\"", for names quoted in messages; a long one is cut to 64 characters.
std::string in_quotes(std::string_view s);
// The names of `values` in order, for choice() and messages: names_of(kAllDTypes, dtype_name).
template <typename Values, typename Name>
std::vector<std::string_view> names_of(const Values& values, Name name) {
  std::vector<std::string_view> out;
  for (const auto& v : values) out.push_back(name(v));
  return out;
}
// "string \"8\"", "number 3.5", "an object", ... for "expected X, got Y" messages.
std::string describe(const json& value);
// The candidate closest to `word` by edit distance when it is close enough to be a likely
// typo, else "".
std::string closest_match(std::string_view word, std::span<const std::string_view> candidates);
// "a, b, c"
std::string join_names(std::span<const std::string_view> names);

enum class Need { kOptional, kRequired };

// Standalone readers for one value at `pointer`: they report and return nullopt when the
// value is not what is expected.
std::optional<std::string> read_string(const json& v, std::string_view pointer, Diagnostics& d);
std::optional<int64_t> read_integer(const json& v, std::string_view pointer, Diagnostics& d,
                                    int64_t min, int64_t max);
std::optional<double> read_number(const json& v, std::string_view pointer, Diagnostics& d,
                                  double min);
std::optional<bool> read_bool(const json& v, std::string_view pointer, Diagnostics& d);
std::optional<Duration> read_duration(const json& v, std::string_view pointer, Diagnostics& d);
std::optional<Bytes> read_bytes(const json& v, std::string_view pointer, Diagnostics& d);
std::optional<Bandwidth> read_bandwidth(const json& v, std::string_view pointer, Diagnostics& d);
std::optional<FlopRate> read_flop_rate(const json& v, std::string_view pointer, Diagnostics& d);
std::optional<Flops> read_flops(const json& v, std::string_view pointer, Diagnostics& d);
// The index of the value in `names`; `what` names the kind of value ("fabric kind").
std::optional<size_t> read_choice(const json& v, std::string_view pointer, Diagnostics& d,
                                  std::span<const std::string_view> names, std::string_view what);
// The elements of a non-empty array, or nullopt after reporting.
const json::array_t* read_array(const json& v, std::string_view pointer, Diagnostics& d,
                                std::string_view element_what);

// One JSON object read key by key. Every getter records the key as known; afterwards
// report_unknown_keys() names whatever the document holds beyond those, so that a typo
// is an error rather than a silent default.
class JsonObject {
 public:
  // nullopt (after reporting) when `value` is not an object.
  static std::optional<JsonObject> open(const json& value, std::string pointer, Diagnostics& d);

  const std::string& pointer() const { return pointer_; }
  std::string pointer(std::string_view key) const { return child_pointer(pointer_, key); }
  const json& value() const { return *object_; }
  Diagnostics& diagnostics() const { return *diag_; }

  // Whether the key is present; records it as known.
  bool has(std::string_view key);
  // The value, or nullptr when absent (reported if required, with `expected` saying what
  // should be there).
  const json* get(std::string_view key, Need need, std::string_view expected);

  std::optional<std::string> string(std::string_view key, Need need,
                                    std::string_view expected = "a string");
  std::optional<int64_t> integer(std::string_view key, Need need, int64_t min,
                                 int64_t max = INT32_MAX);
  std::optional<double> number(std::string_view key, Need need, double min);
  std::optional<bool> boolean(std::string_view key, Need need);
  std::optional<Duration> duration(std::string_view key, Need need);
  std::optional<Bytes> bytes(std::string_view key, Need need);
  std::optional<Bandwidth> bandwidth(std::string_view key, Need need);
  std::optional<FlopRate> flop_rate(std::string_view key, Need need);
  std::optional<Flops> flops(std::string_view key, Need need);
  std::optional<size_t> choice(std::string_view key, Need need,
                               std::span<const std::string_view> names, std::string_view what);

  // Records `key` as known but meaningless here; reports it if present, with `why`.
  void reject(std::string_view key, std::string_view why);
  // Records keys as known without reading them (for keys read elsewhere or skipped after an
  // earlier error, so that they are not also reported as unknown).
  void accept(std::initializer_list<std::string_view> keys);
  // Reports every key of the object that no getter asked about.
  void report_unknown_keys();

 private:
  JsonObject(const json& object, std::string pointer, Diagnostics& d)
      : object_(&object), pointer_(std::move(pointer)), diag_(&d) {}

  const json* object_;
  std::string pointer_;
  Diagnostics* diag_;
  std::vector<std::string> known_;
};

// A closed or open interval, with the words that name it in messages.
struct Range {
  double low, high;
  bool low_included, high_included;
  std::string_view expected;

  bool contains(double x) const {
    return (low_included ? x >= low : x > low) && (high_included ? x <= high : x < high);
  }
};

inline constexpr Range kFraction{0, 1, false, true, "a fraction in (0, 1]"};
inline constexpr Range kUnitInterval{0, 1, true, false, "a number in [0, 1)"};
inline constexpr Range kPositive{0, std::numeric_limits<double>::infinity(), false, false,
                                 "a positive number"};

// Sets `field` from the optional number at `key` when it lies in `range` and says whether
// it did; reports a value out of range or not a number.
bool read_in_range(JsonObject& o, std::string_view key, const Range& range, double& field);

}  // namespace dtsim::scenario_detail
