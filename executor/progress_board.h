// Where a rank is, kept in a small shared file that the launcher reads when the rank dies
// or hangs: its process id, the step, and the last task each of its streams started and
// finished. Written through a shared mapping, so a task's start costs two stores, not a
// system call, and what was written survives the rank being killed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "executor/task_work.h"

namespace dtsim::executor {

inline constexpr uint32_t kNoTask = UINT32_MAX;

// What a board file holds, read back.
struct RankProgress {
  int rank = 0;
  int64_t pid = 0;
  uint32_t step = 0;  // 0: not started; then 1 + the step index
  uint32_t last_started = kNoTask;
  uint32_t last_finished = kNoTask;
  uint32_t started = 0;   // tasks started in this step
  uint32_t finished = 0;  // tasks finished in this step
  bool done = false;      // the rank wrote its timeline and finished
};

class ProgressBoard final : public TaskListener {
 public:
  // Creates (or truncates) `path`. Throws std::runtime_error when it cannot.
  ProgressBoard(const std::filesystem::path& path, int rank);
  ~ProgressBoard() override;
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  void begin_step(uint32_t step_index);
  void mark_done();
  void started(TaskId id) override;
  void finished(TaskId id) override;

  struct Cells;  // the file's 64-byte layout (progress_board.cc)

 private:
  Cells* cells_ = nullptr;
};

// Reads a board; nullopt when the file is missing or not a board (the rank never got as far
// as creating it).
std::optional<RankProgress> read_progress(const std::filesystem::path& path);

}  // namespace dtsim::executor
