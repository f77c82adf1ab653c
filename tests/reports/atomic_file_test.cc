// The atomic file writer: a file is replaced whole, and a write that fails leaves the old
// one and no temporary file behind.
#include "reports/atomic_file.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dtsim {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("dtsim_atomic_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, WritesAndReplacesWhole) {
  const fs::path dir = fresh_dir("replace");
  write_file_atomically(dir / "summary.json", std::string("first\n"));
  EXPECT_EQ(slurp(dir / "summary.json"), "first\n");
  write_file_atomically(dir / "summary.json", [](std::ostream& out) { out << "second\n"; });
  EXPECT_EQ(slurp(dir / "summary.json"), "second\n");
  EXPECT_EQ(entries(dir), 1u);  // no temporary file left
}

TEST(AtomicFile, AFailedWriteKeepsTheOldFile) {
  const fs::path dir = fresh_dir("fail");
  write_file_atomically(dir / "trace.json", std::string("whole\n"));
  EXPECT_THROW(write_file_atomically(dir / "trace.json",
                                     [](std::ostream& out) {
                                       out << "half of a new";
                                       throw std::runtime_error("the writer stopped");
                                     }),
               std::runtime_error);
  EXPECT_EQ(slurp(dir / "trace.json"), "whole\n");
  EXPECT_EQ(entries(dir), 1u);
}

TEST(AtomicFile, AProcessKilledDuringTheWriteLeavesTheOldFileWhole) {
  // A cost database being written when the process is killed (SIGKILL: no handler, no
  // clean-up runs): half the new text is in the temporary file, the target is the old one.
  const fs::path dir = fresh_dir("killed");
  const std::string old_db = "{\"format\": \"dtsim-cost-database\", \"entries\": []}\n";
  write_file_atomically(dir / "db.json", old_db);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    write_file_atomically(dir / "db.json", [](std::ostream& out) {
      out << "{\"format\": \"dtsim-cost-database\", \"entries\": [";
      out.flush();
      raise(SIGKILL);
    });
    _exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(slurp(dir / "db.json"), old_db);
}

TEST(AtomicFile, AnUnwritableFolderIsAnErrorNamingThePath) {
  const fs::path missing = fs::temp_directory_path() / "dtsim_atomic_missing" / "no" / "x.csv";
  try {
    write_file_atomically(missing, std::string("x"));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtsim
