// A file mapped MAP_SHARED, read and written by every process that maps it: the progress
// boards and the doorbells of a real run, which outlive a killed rank in the file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace dtsim::executor {

// Opens (creating it; emptying it first with `truncate`) and sizes `path` to `bytes`, a new
// or grown part zero-filled, and maps it. Throws std::runtime_error naming `what` and the
// path when it cannot. Unmap with unmap_shared_file.
void* map_shared_file(const std::filesystem::path& path, size_t bytes, bool truncate,
                      const std::string& what);
void unmap_shared_file(void* mapping, size_t bytes);

}  // namespace dtsim::executor
