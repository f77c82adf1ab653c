// map_shared_file: open, ftruncate, mmap(MAP_SHARED), close.
#include "executor/shared_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace dtsim::executor {

void* map_shared_file(const std::filesystem::path& path, size_t bytes, bool truncate,
                      const std::string& what) {
  const int fd =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd < 0) {
    throw std::runtime_error("cannot open " + what + " " + path.string() + ": " +
                             std::strerror(errno));
  }
  void* p = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int saved = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    throw std::runtime_error("cannot map " + what + " " + path.string() + ": " +
                             std::strerror(saved));
  }
  return p;
}

void unmap_shared_file(void* mapping, size_t bytes) {
  if (mapping) ::munmap(mapping, bytes);
}

}  // namespace dtsim::executor
