// The strict JSON reader: nlohmann's SAX parser driving a document builder that tracks the
// JSON pointer of every value, so that duplicates and bad numbers are reported where they are.
#include "scenarios/json_document.h"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "scenarios/json_reader.h"

namespace dtsim {

namespace {

using nlohmann::json;

std::atomic<uint64_t> g_max_input_bytes{kDefaultMaxInputBytes};

// "line 3, column 5" of the 0-based byte offset `byte` in `text`.
std::string line_and_column(std::string_view text, size_t byte) {
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// Builds the document as nlohmann's own DOM parser does, and additionally knows the pointer
// of the value being read.
class StrictBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  StrictBuilder(json& root, std::vector<InputProblem>& problems)
      : root_(root), problems_(problems) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(number_integer_t v) { return value(v); }
  bool number_unsigned(number_unsigned_t v) { return value(v); }
  bool number_float(number_float_t v, const string_t&) { return value(v); }
  bool string(string_t& v) { return value(std::move(v)); }
  bool binary(binary_t& v) { return value(json::binary(std::move(v))); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    Level& top = stack_.back();
    top.key = k;
    top.duplicate = top.node->contains(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) {
    error_position_ = position;
    error_token_ = token;
    error_id_ = e.id;
    error_text_ = e.what();
    return false;
  }

  // The problem a failed parse reports, in words: the number, or nlohmann's explanation
  // without its "[json.exception...]" prefix and position, which line_and_column replaces.
  InputProblem failure(std::string_view text) const {
    if (error_id_ == 406) {  // out_of_range: a number literal beyond a double
      const size_t start =
          error_position_ >= error_token_.size() ? error_position_ - error_token_.size() : 0;
      return {"", "invalid JSON at " + line_and_column(text, start) + ": the number " +
                      error_token_.substr(0, 40) +
                      " is beyond the range of a double (about ±1.8e308)"};
    }
    if (depth_exceeded_) {
      // The SAX parser stops without a position when the builder refuses.
      return {"", "invalid JSON: objects and arrays nested deeper than " +
                      std::to_string(kMaxJsonDepth) + " levels"};
    }
    std::string detail = error_text_;
    if (const size_t column = detail.find("column "); column != std::string::npos) {
      if (const size_t colon = detail.find(": ", column); colon != std::string::npos)
        detail = detail.substr(colon + 2);
    }
    // nlohmann's position is 1-based: the byte it stopped at.
    return {"", "invalid JSON at " +
                    line_and_column(text, error_position_ > 0 ? error_position_ - 1 : 0) + ": " +
                    detail};
  }

 private:
  struct Level {
    json* node;
    std::string key;         // the key being read, for an object
    bool duplicate = false;  // that key was already in the object
  };

  // The pointer of the innermost open container, built only when a message needs it: each
  // open container is the last element of its parent array, or its parent's current key.
  std::string open_pointer() const {
    std::string pointer;
    for (size_t i = 1; i < stack_.size(); ++i) {
      const Level& parent = stack_[i - 1];
      pointer = parent.node->is_array()
                    ? scenario_detail::child_pointer(pointer, parent.node->size() - 1)
                    : scenario_detail::child_pointer(pointer, parent.key);
    }
    return pointer;
  }

  // Where the next value goes.
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Level& top = stack_.back();
    if (top.node->is_array()) {
      top.node->push_back(std::move(v));
      return &top.node->back();
    }
    json& slot = (*top.node)[top.key];
    if (top.duplicate) {
      problems_.push_back({scenario_detail::child_pointer(open_pointer(), top.key),
                           "the key " + scenario_detail::in_quotes(top.key) +
                               " is written twice in one object (first " +
                               scenario_detail::describe(slot) + ", then " +
                               scenario_detail::describe(v) + "); keep one of them"});
      top.duplicate = false;
    }
    slot = std::move(v);
    return &slot;
  }

  bool value(json&& v) {
    place(std::move(v));
    return true;
  }

  bool open(json&& container) {
    if (stack_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      depth_exceeded_ = true;
      return false;
    }
    stack_.push_back({place(std::move(container)), {}, false});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  json& root_;
  std::vector<InputProblem>& problems_;
  std::vector<Level> stack_;
  size_t error_position_ = 0;
  std::string error_token_;
  int error_id_ = 0;
  std::string error_text_;
  bool depth_exceeded_ = false;
};

}  // namespace

std::optional<json> parse_json_strictly(std::string_view text,
                                        std::vector<InputProblem>& problems) {
  json document;
  std::vector<InputProblem> duplicates;
  StrictBuilder builder(document, duplicates);
  const bool ok = json::sax_parse(text, &builder);
  if (!ok) {
    problems.push_back(builder.failure(text));
    return std::nullopt;
  }
  if (!duplicates.empty()) {
    problems.insert(problems.end(), duplicates.begin(), duplicates.end());
    return std::nullopt;
  }
  return document;
}

uint64_t max_input_bytes() { return g_max_input_bytes.load(); }
void set_max_input_bytes(uint64_t bytes) { g_max_input_bytes.store(bytes); }

namespace {

// A regular file over the limit fails before a byte is read: "" when within it.
std::string input_size_error(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size <= max_input_bytes()) return "";
  return "the file has " + std::to_string(size) + " bytes, more than the limit of " +
         std::to_string(max_input_bytes()) + " (raise it with dtsim --max-input-size)";
}

}  // namespace

std::optional<std::string> read_input_file(const std::string& path, std::string& error) {
  if (std::string too_big = input_size_error(path); !too_big.empty()) {
    error = std::move(too_big);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::string("cannot read the file: ") + std::strerror(errno);
    return std::nullopt;
  }
  // Read in chunks up to the limit: a pipe or a device (/dev/zero) has no size to check
  // first, and must not grow the buffer without end.
  const uint64_t limit = max_input_bytes();
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > limit) {
      error = "the input has more than the limit of " + std::to_string(limit) +
              " bytes (raise it with dtsim --max-input-size)";
      return std::nullopt;
    }
  }
  if (in.bad()) {
    error = std::string("cannot read the file: ") + std::strerror(errno);
    return std::nullopt;
  }
  return text;
}

}  // namespace dtsim
