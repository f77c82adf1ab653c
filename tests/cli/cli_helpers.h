// What the end-to-end tests of the `dtsim` command share: running it, the bundled
// examples, reading files, a fresh scratch folder per test.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cli_test {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line, capturing its stdout and stderr.
inline Result run_shell(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline Result dtsim(const std::string& args) {
  return run_shell(std::string(DTSIM_BINARY) + " " + args);
}

inline std::string example(const std::string& name) {
  return std::string(DTSIM_SOURCE_DIR) + "/scenarios/examples/" + name;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("dtsim_cli_test_" + name);
  fs::remove_all(dir);
  return dir;
}

}  // namespace cli_test
