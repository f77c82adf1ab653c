// Reading a JSON document's fields with errors that name the file, the field's JSON pointer
// and what was expected (sim/input_error.h), and reading a file's document: the cost
// database's and the probe's readers.
#pragma once

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
