// Records kept in a bounded buffer that spills to an unnamed temporary file, read back in
// order: what a trace collects during a run without holding all of it in memory (a
// 1,024-GPU collective sweep's link spans are 500,000 records, 20 MB, that no estimate made
// before the run can count).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace dtsim {

template <typename T>
class SpilledRecords {
  static_assert(std::is_trivially_copyable_v<T>, "records are spilled as their bytes");

 public:
  // The most records held in memory; the rest wait in the file. The buffer grows by
  // doubling, so it peaks at one and a half times its size while it moves. Spilled records
  // come back in chunks of a quarter of it, read beside the full buffer: less than that.
  static constexpr size_t kBuffered = 1 << 16;
  static constexpr size_t kReadBack = kBuffered / 4;
  static constexpr double kMaxBytes = 1.5 * kBuffered * sizeof(T);

  void push_back(const T& record) {
    if (buffer_.size() == kBuffered) spill();
    buffer_.push_back(record);
    ++size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Calls fn(record) for every record in the order they were added.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    if (file_) {
      std::rewind(file_.get());
      std::vector<T> chunk(kReadBack);
      size_t left = spilled_;
      while (left > 0) {
        const size_t n =
            std::fread(chunk.data(), sizeof(T), std::min(left, kReadBack), file_.get());
        if (n == 0) throw std::runtime_error("cannot read back the trace's spilled records");
        for (size_t i = 0; i < n; ++i) fn(chunk[i]);
        left -= n;
      }
    }
    for (const T& r : buffer_) fn(r);
  }

 private:
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  void spill() {
    if (!file_) {
      file_.reset(std::tmpfile());
      if (!file_) {
        throw std::runtime_error(std::string("cannot create a temporary file for the trace: ") +
                                 std::strerror(errno));
      }
    }
    if (std::fwrite(buffer_.data(), sizeof(T), buffer_.size(), file_.get()) != buffer_.size()) {
      throw std::runtime_error(std::string("cannot write the trace's temporary file: ") +
                               std::strerror(errno));
    }
    spilled_ += buffer_.size();
    buffer_.clear();
  }

  std::vector<T> buffer_;
  std::unique_ptr<std::FILE, Close> file_;  // unnamed: gone with the process, even when killed
  size_t spilled_ = 0;
  size_t size_ = 0;
};

}  // namespace dtsim
