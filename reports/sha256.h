// SHA-256 digests (OpenSSL's libcrypto) for the manifests that tie a run's files together.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace dtsim {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // The digest as 64 lower-case hex digits; the object is spent afterwards.
  std::string hex_digest();

 private:
  struct Free {
    void operator()(void* context) const;
  };
  std::unique_ptr<void, Free> context_;
};

std::string sha256_hex(std::string_view bytes);
// The digest of a file's content; throws std::runtime_error naming it when unreadable.
std::string sha256_of_file(const std::filesystem::path& path);

}  // namespace dtsim
