// Where the CLI's outputs and helper programs are.
#include <filesystem>
#include <string>

#include "cli/commands.h"

namespace dtsim::cli {

std::string folder_name(std::string name) {
  for (char& c : name) {
    if (c == '/' || c == '\\') c = '_';
  }
  while (!name.empty() && name.front() == '.') name.front() = '_';
  return name.empty() ? "scenario" : name;
}

std::filesystem::path beside_dtsim(std::string_view program) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path("dtsim") : self).parent_path() / program;
}

}  // namespace dtsim::cli
