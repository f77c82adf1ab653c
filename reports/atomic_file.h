// Every output file of the project is written whole or not at all: the content goes to a
// temporary file in the target's folder, is flushed to disk, then renamed over the target
// (rename is atomic within one file system), so an interrupted run leaves the old file or
// none, never half of a new one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace dtsim {

// What a finished write put on disk: the file's size and SHA-256 (lower-case hex), which a
// run's manifest lists so that a reader can tell which files belong together.
struct WrittenFile {
  std::filesystem::path path;
  uint64_t bytes = 0;
  std::string sha256;
};

// A file written in full under a temporary name beside its target and flushed to disk, not
// yet in place: commit() renames it over the target. One that is neither committed nor
// kept is removed when it goes out of scope, so a failed run leaves no temporary behind.
class StagedFile {
 public:
  StagedFile() = default;
  StagedFile(StagedFile&& other) noexcept;
  StagedFile& operator=(StagedFile&& other) noexcept;
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile();

  const WrittenFile& file() const { return file_; }
  // Renames the temporary over the target. The folder is not synced: the caller syncs it
  // once after its last rename (sync_folder).
  WrittenFile commit();

 private:
  friend StagedFile stage_file(const std::filesystem::path&,
                               const std::function<void(std::ostream&)>&);
  std::filesystem::path temporary_;
  WrittenFile file_;
};

// Writes `write`'s output under a temporary name beside `path` and flushes it to disk.
// Throws std::runtime_error naming `path` and the reason (e.g. "No space left on device")
// when any step fails; the writer's own exception keeps its type. Either way the temporary
// file is removed.
StagedFile stage_file(const std::filesystem::path& path,
                      const std::function<void(std::ostream&)>& write);

// Flushes a folder's entries (the renames into it) to disk; throws naming the folder.
void sync_folder(const std::filesystem::path& folder);

// stage_file, commit and sync_folder in one: replaces `path` whole.
WrittenFile write_file_atomically(const std::filesystem::path& path,
                                  const std::function<void(std::ostream&)>& write);
inline WrittenFile write_file_atomically(const std::filesystem::path& path,
                                         const std::string& text) {
  return write_file_atomically(path, [&](std::ostream& out) { out << text; });
}

// True for the temporary names stage_file picks; `owner` is then the writing process's id.
bool is_staged_temporary(const std::string& name, int* owner);

}  // namespace dtsim
