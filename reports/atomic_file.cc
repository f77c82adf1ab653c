// The atomic file writer: temporary file in the same folder, written through a file
// descriptor (so a failure reports its errno), hashed on the way out, fsynced, renamed.
#include "reports/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <streambuf>
#include <vector>

#include "reports/sha256.h"

namespace dtsim {

namespace {

constexpr std::string_view kTemporaryPrefix = ".dtsim-tmp.";

// A name no other writer of this process or another picks at the same time, short enough
// for NAME_MAX whatever the target's name.
std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  static std::atomic<uint64_t> counter{0};
  return path.parent_path() / (std::string(kTemporaryPrefix) + std::to_string(::getpid()) + "." +
                               std::to_string(counter++));
}

std::runtime_error write_error(const std::filesystem::path& path, int error) {
  return std::runtime_error("cannot write " + path.string() + ": " + std::strerror(error));
}

// Writes what the stream puts to a descriptor and feeds the same bytes to SHA-256. A failed
// write() makes the stream bad and keeps its errno, which std::ofstream would lose.
class HashingFileBuffer : public std::streambuf {
 public:
  explicit HashingFileBuffer(int fd) : fd_(fd), buffer_(1 << 18) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }

  int error() const { return error_; }
  uint64_t bytes() const { return bytes_; }
  std::string hex_digest() { return digest_.hex_digest(); }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    if (error_ != 0) return false;
    const char* p = pbase();
    const size_t n = static_cast<size_t>(pptr() - pbase());
    digest_.update(std::string_view(p, n));
    size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(fd_, p + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = w < 0 ? errno : ENOSPC;
        return false;
      }
      done += static_cast<size_t>(w);
    }
    bytes_ += n;
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  Sha256 digest_;
  int error_ = 0;
  uint64_t bytes_ = 0;
};

void remove_quietly(const std::filesystem::path& p) {
  std::error_code ignored;
  std::filesystem::remove(p, ignored);
}

}  // namespace

StagedFile::StagedFile(StagedFile&& other) noexcept
    : temporary_(std::move(other.temporary_)), file_(std::move(other.file_)) {
  other.temporary_.clear();
}

StagedFile& StagedFile::operator=(StagedFile&& other) noexcept {
  if (this != &other) {
    if (!temporary_.empty()) remove_quietly(temporary_);
    temporary_ = std::move(other.temporary_);
    file_ = std::move(other.file_);
    other.temporary_.clear();
  }
  return *this;
}

StagedFile::~StagedFile() {
  if (!temporary_.empty()) remove_quietly(temporary_);
}

WrittenFile StagedFile::commit() {
  std::error_code ec;
  std::filesystem::rename(temporary_, file_.path, ec);
  if (ec) throw write_error(file_.path, ec.value());
  temporary_.clear();
  return file_;
}

StagedFile stage_file(const std::filesystem::path& path,
                      const std::function<void(std::ostream&)>& write) {
  StagedFile staged;
  staged.file_.path = path;
  const std::filesystem::path tmp = temporary_beside(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw write_error(path, errno);
  staged.temporary_ = tmp;  // from here on the destructor removes it
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() {
      if (fd >= 0) ::close(fd);
    }
  } closer{fd};
  HashingFileBuffer buffer(fd);
  std::ostream out(&buffer);
  out.exceptions(std::ios::goodbit);
  write(out);  // the writer's own failure (an InternalError, a bad_alloc) keeps its type
  out.flush();
  if (buffer.error() != 0) throw write_error(path, buffer.error());
  if (!out) throw std::runtime_error("cannot write " + path.string() + ": the write failed");
  if (::fsync(fd) != 0) throw write_error(path, errno);
  closer.fd = -1;
  // close() reports what a network file system deferred.
  if (::close(fd) != 0) throw write_error(path, errno);
  staged.file_.bytes = buffer.bytes();
  staged.file_.sha256 = buffer.hex_digest();
  return staged;
}

void sync_folder(const std::filesystem::path& folder) {
  const std::filesystem::path dir = folder.empty() ? std::filesystem::path(".") : folder;
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw write_error(dir, errno);
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) throw write_error(dir, saved);
}

WrittenFile write_file_atomically(const std::filesystem::path& path,
                                  const std::function<void(std::ostream&)>& write) {
  StagedFile staged = stage_file(path, write);
  WrittenFile done = staged.commit();
  // The rename itself reaches the disk with its folder.
  sync_folder(path.parent_path());
  return done;
}

bool is_staged_temporary(const std::string& name, int* owner) {
  if (name.rfind(kTemporaryPrefix, 0) != 0) return false;
  const std::string rest = name.substr(kTemporaryPrefix.size());
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string::npos) return false;
  int pid = 0;
  for (size_t i = 0; i < dot; ++i) {
    if (rest[i] < '0' || rest[i] > '9' || pid > 1'000'000'000) return false;
    pid = pid * 10 + (rest[i] - '0');
  }
  if (owner != nullptr) *owner = pid;
  return true;
}

}  // namespace dtsim
