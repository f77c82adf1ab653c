// Reading a JSON document's fields with errors that name the file, the field's JSON pointer
// and what was expected (sim/input_error.h), and reading a file's document: the cost
// database's and the probe's readers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/input_error.h"

namespace dtsim::calibration {

// A field of an object, or an InputError at its pointer naming what was expected.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw InputError(source_, {{pointer, message}});
  }
  const nlohmann::json& at(const nlohmann::json& o, const std::string& pointer,
                           const char* key) const {
    if (!o.is_object()) fail(pointer, "expected an object");
    const auto it = o.find(key);
    if (it == o.end()) fail(pointer + "/" + key, "missing");
    return *it;
  }
  std::string text(const nlohmann::json& o, const std::string& pointer, const char* key) const {
    const nlohmann::json& v = at(o, pointer, key);
    if (!v.is_string()) fail(pointer + "/" + key, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  double number(const nlohmann::json& o, const std::string& pointer, const char* key) const {
    const nlohmann::json& v = at(o, pointer, key);
    if (!v.is_number()) fail(pointer + "/" + key, "expected a number, got " + v.dump());
    return v.get<double>();
  }
  // A non-empty array of non-negative seconds (timed repeats).
  std::vector<double> seconds(const nlohmann::json& o, const std::string& pointer,
                              const char* key) const {
    const nlohmann::json& v = at(o, pointer, key);
    if (!v.is_array() || v.empty())
      fail(pointer + "/" + key, "expected a non-empty array of seconds");
    std::vector<double> out;
    for (const nlohmann::json& s : v) {
      if (!s.is_number() || s.get<double>() < 0) {
        fail(pointer + "/" + key, "expected non-negative numbers, got " + s.dump());
      }
      out.push_back(s.get<double>());
    }
    return out;
  }
  // A whole number in [min, max] (max at most 2^53, where doubles stop counting by one): a
  // count or a size that is cast to an integer, which for 1e300 would be undefined.
  int64_t whole(const nlohmann::json& o, const std::string& pointer, const char* key, int64_t min,
                int64_t max) const {
    const nlohmann::json& v = at(o, pointer, key);
    return whole_value(v, pointer + "/" + key, min, max);
  }
  // An optional true or false: absent is false.
  bool flag_or(const nlohmann::json& o, const std::string& pointer, const char* key) const {
    const auto it = o.find(key);
    if (it == o.end()) return false;
    if (!it->is_boolean()) fail(pointer + "/" + key, "expected true or false, got " + it->dump());
    return it->get<bool>();
  }
  // Optional whole numbers of the device: absent (or not a number) is 0.
  int64_t whole_or(const nlohmann::json& o, const std::string& pointer, const char* key,
                   int64_t max) const {
    const auto it = o.find(key);
    if (it == o.end() || !it->is_number()) return 0;
    return whole_value(*it, pointer + "/" + key, 0, max);
  }
  // Optional fields of the device: absent is the default.
  std::string text_or(const nlohmann::json& o, const char* key) const {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  }
  double number_or(const nlohmann::json& o, const char* key) const {
    const auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<double>() : 0.0;
  }

 private:
  int64_t whole_value(const nlohmann::json& v, const std::string& pointer, int64_t min,
                      int64_t max) const {
    constexpr int64_t kMaxExact = int64_t{1} << 53;
    max = std::min(max, kMaxExact);
    const double d = v.is_number() ? v.get<double>() : std::nan("");
    if (!(d >= static_cast<double>(min) && d <= static_cast<double>(max)) || d != std::floor(d)) {
      fail(pointer, "expected a whole number from " + std::to_string(min) + " to " +
                        std::to_string(max) + ", got " + v.dump());
    }
    return static_cast<int64_t>(d);
  }

  std::string source_;
};

// The JSON document in the file `path`. InputError naming the file: "cannot read `what`",
// or "not a JSON document (the parser's message)" followed by `hint`.
inline nlohmann::json read_json_file(const std::string& path, const std::string& what,
                                     const std::string& hint) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, {{"", "cannot read " + what}});
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, {{"", std::string("not a JSON document (") + e.what() + ")" + hint}});
  }
}

}  // namespace dtsim::calibration
