// The atomic file writer: temporary file in the same folder, flush, fsync, rename.
#include "reports/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace dtsim {

namespace {

// A name no other writer of this process or another picks at the same time, short enough
// for NAME_MAX whatever the target's name.
std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  static std::atomic<uint64_t> counter{0};
  return path.parent_path() /
         (".dtsim-tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++));
}

void sync_to_disk(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error(std::strerror(saved));
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write) {
  const std::filesystem::path tmp = temporary_beside(path);
  const auto remove_tmp = [&] {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
  };
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
    write(out);
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + path.string() + ": the write failed");
  } catch (...) {
    // The writer's own failure (an InternalError, a bad_alloc) keeps its type.
    remove_tmp();
    throw;
  }
  try {
    sync_to_disk(tmp);
    std::filesystem::rename(tmp, path);
    // The rename itself reaches the disk with its folder.
    sync_to_disk(path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path());
  } catch (const std::exception& e) {
    remove_tmp();
    throw std::runtime_error("cannot write " + path.string() + ": " + e.what());
  }
}

}  // namespace dtsim
