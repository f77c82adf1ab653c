// Typed JSON reading with JSON pointers, collected errors and unknown-key reports.
#include "scenarios/json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "sim/unit_parse.h"

namespace dtsim::scenario_detail {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, the most
// common typo ("fdw" for "fwd").
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> m(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) m[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) m[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      m[i][j] = std::min({m[i - 1][j] + 1, m[i][j - 1] + 1, m[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        m[i][j] = std::min(m[i][j], m[i - 2][j - 2] + 1);
      }
    }
  }
  return m[a.size()][b.size()];
}

std::string integer_expectation(int64_t min, int64_t max) {
  if (max >= INT32_MAX) return "an integer >= " + std::to_string(min);
  return "an integer in " + std::to_string(min) + ".." + std::to_string(max);
}

std::string number_expectation(double min) {
  std::string m = json(min).dump();
  return "a number >= " + m;
}

// Shared shape of the unit readers: a string, handed to one of sim/unit_parse.h's parsers.
template <typename T, typename Parse>
std::optional<T> read_unit(const json& v, std::string_view pointer, Diagnostics& d,
                           std::string_view expected, Parse parse) {
  if (!v.is_string()) {
    d.error(pointer, "expected " + std::string(expected) + ", got " + describe(v));
    return std::nullopt;
  }
  auto parsed = parse(v.get_ref<const std::string&>());
  if (!parsed) {
    d.error(pointer, parsed.error);
    return std::nullopt;
  }
  return *parsed.value;
}

constexpr std::string_view kDurationExpected = "a duration such as \"1.5us\"";
constexpr std::string_view kBytesExpected = "a size such as \"1MiB\"";
constexpr std::string_view kBandwidthExpected = "a bandwidth such as \"400Gbps\"";
constexpr std::string_view kFlopRateExpected = "a FLOP rate such as \"312TFLOPS\"";
constexpr std::string_view kFlopsExpected = "a FLOP count such as \"1.2TFLOP\"";

}  // namespace

void Diagnostics::error(std::string_view pointer, std::string message) {
  // The last guard against a message that echoes a huge input whole: keep its head and
  // tail (the expectation is at the end).
  constexpr size_t kLongest = 1000;
  if (message.size() > kLongest) {
    message = message.substr(0, kLongest / 2) + " [... " +
              std::to_string(message.size() - kLongest) + " characters cut ...] " +
              message.substr(message.size() - kLongest / 2 + 1);
  }
  items_.push_back(Diagnostic{std::string(pointer), std::move(message)});
}

std::string in_quotes(std::string_view s) {
  // A name echoed back is cut: a message stays readable whatever the input held.
  constexpr size_t kLongest = 64;
  if (s.size() > kLongest)
    return "\"" + std::string(s.substr(0, kLongest - 3)) + "...\" (" + std::to_string(s.size()) +
           " characters)";
  return "\"" + std::string(s) + "\"";
}

std::string child_pointer(std::string_view parent, std::string_view key) {
  std::string out(parent);
  out += '/';
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string child_pointer(std::string_view parent, size_t index) {
  return std::string(parent) + "/" + std::to_string(index);
}

std::string sibling_pointer(std::string_view pointer, size_t index) {
  return child_pointer(pointer.substr(0, pointer.rfind('/')), index);
}

std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      if (s.size() > 40) return "string " + in_quotes(s.substr(0, 37) + "...");
      return "string " + in_quotes(s);
    }
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "number " + value.dump();
    default: return "a " + std::string(value.type_name());
  }
}

std::string closest_match(std::string_view word, std::span<const std::string_view> candidates) {
  const std::string w = lower(word);
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (std::string_view c : candidates) {
    const size_t distance = edit_distance(w, lower(c));
    const size_t allowed = std::max<size_t>(1, std::min(w.size(), c.size()) / 3);
    if (distance <= allowed && distance < best_distance) {
      best = std::string(c);
      best_distance = distance;
    }
  }
  return best;
}

std::string join_names(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

std::optional<std::string> read_string(const json& v, std::string_view pointer, Diagnostics& d) {
  if (!v.is_string()) {
    d.error(pointer, "expected a string, got " + describe(v));
    return std::nullopt;
  }
  return v.get<std::string>();
}

std::optional<int64_t> read_integer(const json& v, std::string_view pointer, Diagnostics& d,
                                    int64_t min, int64_t max) {
  std::optional<int64_t> n;
  bool in_range = true;
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    in_range = u <= static_cast<uint64_t>(max);
    if (in_range) n = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_number_float()) {
    // JSON Schema counts 8.0 as an integer; so do we.
    const double x = v.get<double>();
    if (std::isfinite(x) && std::floor(x) == x) {
      in_range = x >= static_cast<double>(min) && x <= static_cast<double>(max);
      if (in_range) n = static_cast<int64_t>(x);
    }
  }
  if (n && (*n < min || *n > max)) in_range = false;
  if (!in_range) {
    d.error(pointer, v.dump() + " is out of range (expected " + integer_expectation(min, max) + ")");
    return std::nullopt;
  }
  if (!n) {
    d.error(pointer, "expected " + integer_expectation(min, max) + ", got " + describe(v));
    return std::nullopt;
  }
  return n;
}

std::optional<double> read_number(const json& v, std::string_view pointer, Diagnostics& d,
                                  double min) {
  if (!v.is_number()) {
    d.error(pointer, "expected " + number_expectation(min) + ", got " + describe(v));
    return std::nullopt;
  }
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < min) {
    d.error(pointer, v.dump() + " is out of range (expected " + number_expectation(min) + ")");
    return std::nullopt;
  }
  return x;
}

std::optional<bool> read_bool(const json& v, std::string_view pointer, Diagnostics& d) {
  if (!v.is_boolean()) {
    d.error(pointer, "expected true or false, got " + describe(v));
    return std::nullopt;
  }
  return v.get<bool>();
}

std::optional<Duration> read_duration(const json& v, std::string_view pointer, Diagnostics& d) {
  return read_unit<Duration>(v, pointer, d, kDurationExpected,
                             [](std::string_view s) { return parse_duration(s); });
}

std::optional<Bytes> read_bytes(const json& v, std::string_view pointer, Diagnostics& d) {
  return read_unit<Bytes>(v, pointer, d, kBytesExpected,
                          [](std::string_view s) { return parse_bytes(s); });
}

std::optional<Bandwidth> read_bandwidth(const json& v, std::string_view pointer, Diagnostics& d) {
  return read_unit<Bandwidth>(v, pointer, d, kBandwidthExpected,
                              [](std::string_view s) { return parse_bandwidth(s); });
}

std::optional<FlopRate> read_flop_rate(const json& v, std::string_view pointer, Diagnostics& d) {
  return read_unit<FlopRate>(v, pointer, d, kFlopRateExpected,
                             [](std::string_view s) { return parse_flop_rate(s); });
}

std::optional<Flops> read_flops(const json& v, std::string_view pointer, Diagnostics& d) {
  return read_unit<Flops>(v, pointer, d, kFlopsExpected,
                          [](std::string_view s) { return parse_flops(s); });
}

std::optional<size_t> read_choice(const json& v, std::string_view pointer, Diagnostics& d,
                                  std::span<const std::string_view> names, std::string_view what) {
  if (!v.is_string()) {
    d.error(pointer, "expected a " + std::string(what) + " (one of " + join_names(names) +
                         "), got " + describe(v));
    return std::nullopt;
  }
  const auto& s = v.get_ref<const std::string&>();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == s) return i;
  }
  std::string message = "unknown " + std::string(what) + " " + in_quotes(s) + " (";
  if (std::string guess = closest_match(s, names); !guess.empty()) {
    message += "did you mean " + in_quotes(guess) + "? ";
  }
  d.error(pointer, message + "expected one of " + join_names(names) + ")");
  return std::nullopt;
}

const json::array_t* read_array(const json& v, std::string_view pointer, Diagnostics& d,
                                std::string_view element_what) {
  if (!v.is_array()) {
    d.error(pointer, "expected an array of " + std::string(element_what) + ", got " + describe(v));
    return nullptr;
  }
  if (v.empty()) {
    d.error(pointer, "must not be empty (expected at least one " + std::string(element_what) + ")");
    return nullptr;
  }
  return v.get_ptr<const json::array_t*>();
}

std::optional<JsonObject> JsonObject::open(const json& value, std::string pointer,
                                           Diagnostics& d) {
  if (!value.is_object()) {
    // The whole document has no key to name: say "/" so the reader knows where.
    d.error(pointer, std::string(pointer.empty() ? "/: the document must be an object, "
                                                 : "expected an object, ") +
                         "got " + describe(value));
    return std::nullopt;
  }
  return JsonObject(value, std::move(pointer), d);
}

bool JsonObject::has(std::string_view key) {
  accept({key});
  return object_->contains(std::string(key));
}

const json* JsonObject::get(std::string_view key, Need need, std::string_view expected) {
  if (has(key)) return &object_->at(std::string(key));
  if (need == Need::kRequired) {
    diag_->error(pointer(key), "missing required key " + in_quotes(key) + " (expected " +
                                   std::string(expected) + ")");
  }
  return nullptr;
}

std::optional<std::string> JsonObject::string(std::string_view key, Need need,
                                              std::string_view expected) {
  const json* v = get(key, need, expected);
  return v ? read_string(*v, pointer(key), *diag_) : std::nullopt;
}

std::optional<int64_t> JsonObject::integer(std::string_view key, Need need, int64_t min,
                                           int64_t max) {
  const json* v = get(key, need, integer_expectation(min, max));
  return v ? read_integer(*v, pointer(key), *diag_, min, max) : std::nullopt;
}

std::optional<double> JsonObject::number(std::string_view key, Need need, double min) {
  const json* v = get(key, need, number_expectation(min));
  return v ? read_number(*v, pointer(key), *diag_, min) : std::nullopt;
}

std::optional<bool> JsonObject::boolean(std::string_view key, Need need) {
  const json* v = get(key, need, "true or false");
  return v ? read_bool(*v, pointer(key), *diag_) : std::nullopt;
}

std::optional<Duration> JsonObject::duration(std::string_view key, Need need) {
  const json* v = get(key, need, kDurationExpected);
  return v ? read_duration(*v, pointer(key), *diag_) : std::nullopt;
}

std::optional<Bytes> JsonObject::bytes(std::string_view key, Need need) {
  const json* v = get(key, need, kBytesExpected);
  return v ? read_bytes(*v, pointer(key), *diag_) : std::nullopt;
}

std::optional<Bandwidth> JsonObject::bandwidth(std::string_view key, Need need) {
  const json* v = get(key, need, kBandwidthExpected);
  return v ? read_bandwidth(*v, pointer(key), *diag_) : std::nullopt;
}

std::optional<FlopRate> JsonObject::flop_rate(std::string_view key, Need need) {
  const json* v = get(key, need, kFlopRateExpected);
  return v ? read_flop_rate(*v, pointer(key), *diag_) : std::nullopt;
}

std::optional<Flops> JsonObject::flops(std::string_view key, Need need) {
  const json* v = get(key, need, kFlopsExpected);
  return v ? read_flops(*v, pointer(key), *diag_) : std::nullopt;
}

std::optional<size_t> JsonObject::choice(std::string_view key, Need need,
                                         std::span<const std::string_view> names,
                                         std::string_view what) {
  const json* v = get(key, need, "a " + std::string(what) + ": one of " + join_names(names));
  return v ? read_choice(*v, pointer(key), *diag_, names, what) : std::nullopt;
}

void JsonObject::reject(std::string_view key, std::string_view why) {
  if (has(key)) diag_->error(pointer(key), in_quotes(key) + " " + std::string(why));
}

void JsonObject::accept(std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  }
}

void JsonObject::report_unknown_keys() {
  std::vector<std::string_view> known(known_.begin(), known_.end());
  for (const auto& [key, value] : object_->items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string message = "unknown key " + in_quotes(key);
    if (std::string guess = closest_match(key, known); !guess.empty()) {
      message += " (did you mean " + in_quotes(guess) + "?)";
    } else if (!known.empty()) {
      message += " (expected one of " + join_names(known) + ")";
    }
    diag_->error(pointer(key), message);
  }
}

bool read_in_range(JsonObject& o, std::string_view key, const Range& range, double& field) {
  const json* v = o.get(key, Need::kOptional, range.expected);
  if (!v) return false;
  if (!v->is_number()) {
    o.diagnostics().error(o.pointer(key), "expected " + std::string(range.expected) + ", got " +
                                              describe(*v));
    return false;
  }
  const double x = v->get<double>();
  if (!std::isfinite(x) || !range.contains(x)) {
    o.diagnostics().error(o.pointer(key), v->dump() + " is out of range (expected " +
                                              std::string(range.expected) + ")");
    return false;
  }
  field = x;
  return true;
}

}  // namespace dtsim::scenario_detail
