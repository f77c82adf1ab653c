// ProgressBoard: what a rank writes through its mapping is what the launcher reads back,
// also after the board is gone (a killed rank); a missing or foreign file reads as nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "executor/progress_board.h"

namespace dtsim::executor {
namespace {

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("dtsim-board-" + std::to_string(::getpid()) + "-" + name);
}

TEST(ProgressBoard, ReadsBackWhatTheRankWrote) {
  const auto path = scratch("a");
  {
    ProgressBoard board(path, 3);
    auto p = read_progress(path);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->rank, 3);
    EXPECT_EQ(p->pid, ::getpid());
    EXPECT_EQ(p->step, 0u);
    EXPECT_EQ(p->last_started, kNoTask);
    board.begin_step(4);
    board.started(10);
    board.finished(10);
    board.started(11);
    p = read_progress(path);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->step, 5u);
    EXPECT_EQ(p->last_started, 11u);
    EXPECT_EQ(p->last_finished, 10u);
    EXPECT_EQ(p->started, 2u);
    EXPECT_EQ(p->finished, 1u);
    EXPECT_FALSE(p->done);
    board.mark_done();
  }
  const auto p = read_progress(path);  // the mapping is gone; the file keeps it
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->done);
  std::filesystem::remove(path);
}

TEST(ProgressBoard, AMissingOrForeignFileReadsAsNothing) {
  EXPECT_FALSE(read_progress(scratch("missing")));
  const auto path = scratch("foreign");
  std::ofstream(path) << std::string(64, 'x');
  EXPECT_FALSE(read_progress(path));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dtsim::executor
