// Reading JSON input strictly: a number beyond a double's range, a key written twice in one
// object and nesting too deep to process are errors with their place, where nlohmann's
// default parser would throw its raw text, keep the last key silently, or recurse on; and
// every input file is bounded in size, so a huge file fails at once instead of filling memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/input_error.h"

namespace dtsim {

// Objects and arrays nested deeper than this are refused (the loaders recurse over them).
inline constexpr int kMaxJsonDepth = 256;

// Parses `text`. On failure returns nullopt and appends the problems: a syntax error or an
// out-of-range number as "invalid JSON at line L, column C: ..." at the root, each key
// written twice at its pointer, naming both values.
std::optional<nlohmann::json> parse_json_strictly(std::string_view text,
                                                  std::vector<InputProblem>& problems);

// The largest input file dtsim reads (scenarios, lowered graphs, cost databases, model
// configs); `dtsim --max-input-size` changes it for one command.
// 1 GiB: 25 times the largest lowered graph `dtsim lower` writes for a bundled example
// (gpt3-175b-1024xA100, 40 MB).
inline constexpr uint64_t kDefaultMaxInputBytes = uint64_t{1} << 30;
uint64_t max_input_bytes();
void set_max_input_bytes(uint64_t bytes);

// Reads a whole input file, refusing one larger than max_input_bytes() before reading it
// (or, for a pipe or a device, once it has read that much).
// Returns nullopt with `error` saying why ("cannot read the file: ...", "the file has N
// bytes, more than the limit of M (dtsim --max-input-size)").
std::optional<std::string> read_input_file(const std::string& path, std::string& error);

}  // namespace dtsim
