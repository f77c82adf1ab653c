// Every output file of the project is written whole or not at all: the content goes to a
// temporary file in the target's folder, is flushed to disk, then renamed over the target
// (rename is atomic within one file system), so an interrupted run leaves the old file or
// none, never half of a new one.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace dtsim {

// Calls `write` on a stream into the temporary file, then replaces `path` with it. Throws
// std::runtime_error naming the path when any step fails; the temporary file is removed.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);
inline void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  write_file_atomically(path, [&](std::ostream& out) { out << text; });
}

}  // namespace dtsim
