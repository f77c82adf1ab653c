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

// A name no other writer of this process or another picks at the same time.
std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  static std::atomic<uint64_t> counter{0};
  return path.parent_path() / ("." + path.filename().string() + ".tmp." +
                               std::to_string(::getpid()) + "." + std::to_string(counter++));
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
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw std::runtime_error(std::strerror(errno));
      write(out);
      out.flush();
      if (!out) throw std::runtime_error("the write failed");
    }
    sync_to_disk(tmp);
    std::filesystem::rename(tmp, path);
  } catch (const std::exception& e) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw std::runtime_error("cannot write " + path.string() + ": " + e.what());
  }
}

}  // namespace dtsim
